// aotgrad: what a call costs -- FLOPs from metadata, or seconds from a measured cost profile.
#include "aotgrad/transforms/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "aotgrad/ir/error.h"
#include "aotgrad/support/file.h"
#include "aotgrad/support/sha256.h"
#include "aotgrad/transforms/op_classes.h"

namespace aotgrad {
namespace {

constexpr const char* kFormat = "aotgrad cost profile";
constexpr int kVersion = 2;  // 2 added "ops"; a version-1 profile is still read

const TensorMeta* tensor_arg(const Node& n, size_t i) {
  if (i >= n.args().size() || !n.args()[i].is_node()) return nullptr;
  const ValueMeta& m = n.args()[i].node->meta();
  return m.is_tensor() ? &m.tensor : nullptr;
}

double numel(const TensorMeta& t) { return static_cast<double>(t.numel().hint_or(4096)); }

double dim(const TensorMeta& t, size_t d) {
  return d < t.sizes.size() ? static_cast<double>(t.sizes[d].hint_or(4096)) : 1.0;
}

/// Elements of weight per output channel: input channels per group times kernel elements.
double per_output_channel(const TensorMeta& w) {
  double d0 = dim(w, 0);
  return d0 > 0 ? numel(w) / d0 : 0.0;
}

/// 2 * M * K * N of (M x K) @ (K x N), batched by the leading dimensions of `a`.
double matmul_flops(const TensorMeta& a, const TensorMeta& b) {
  if (a.sizes.size() < 2 || b.sizes.empty()) return 0;
  double k = dim(a, a.sizes.size() - 1);
  double rows = numel(a) / std::max(k, 1.0);  // B * M
  double n = dim(b, b.sizes.size() - 1);
  return 2 * rows * k * n;
}

// Each tensor of the call's arguments and results, once per node.
template <typename F>
void for_each_tensor(const Node& n, F f) {
  std::vector<const Node*> seen;
  for (const Arg& a : n.args())
    a.for_each_node([&](Node* m) {
      if (std::find(seen.begin(), seen.end(), m) != seen.end()) return;
      seen.push_back(m);
      if (m->meta().is_tensor()) f(m->meta().tensor);
    });
  const ValueMeta& r = n.meta();
  if (r.is_tensor()) f(r.tensor);
  if (r.kind == ValueMeta::Kind::Tuple)
    for (const ValueMeta& e : r.elems)
      if (e.is_tensor()) f(e.tensor);
}

double largest_element_count(const Node& n) {
  double most = 0;
  for_each_tensor(n, [&](const TensorMeta& t) { most = std::max(most, numel(t)); });
  return most;
}

bool is_matmul(std::string_view p) {
  return p == "aten::mm" || p == "aten::bmm" || p == "aten::addmm" || p == "aten::baddbmm";
}

bool is_convolution(std::string_view p) {
  return p == "aten::convolution" || p == "aten::convolution_backward";
}

[[noreturn]] void bad(const std::string& where, const std::string& cause) {
  throw Error("cost profile '" + where + "': " + cause);
}

CostCurve parse_curve(const nlohmann::json& j, const std::string& name, const std::string& where) {
  if (!j.contains(name) || !j[name].is_array() || j[name].empty())
    bad(where, "'" + name + "' is not a non-empty list of [work, seconds] points");
  CostCurve c;
  for (const nlohmann::json& p : j[name]) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number())
      bad(where, "a point of '" + name + "' is not [work, seconds]");
    double w = p[0].get<double>(), s = p[1].get<double>();
    if (!(w > 0) || !(s >= 0) || !std::isfinite(w) || !std::isfinite(s))
      bad(where, "a point of '" + name + "' has work <= 0 or seconds < 0");
    if (!c.points.empty() && !(w > c.points.back().first))
      bad(where, "the work of '" + name + "' does not increase");
    if (!c.points.empty() && s < c.points.back().second)
      bad(where, "the seconds of '" + name + "' decrease");
    c.points.emplace_back(w, s);
  }
  return c;
}

nlohmann::json curve_json(const CostCurve& c) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [w, s] : c.points) a.push_back({w, s});
  return a;
}

}  // namespace

const char* cost_model_name(CostModelKind kind) {
  return kind == CostModelKind::kFlops ? "flops" : "measured";
}

CostModelKind parse_cost_model(std::string_view name) {
  if (name == "flops") return CostModelKind::kFlops;
  if (name == "measured") return CostModelKind::kMeasured;
  throw Error("unknown cost model '" + std::string(name) + "' (known: flops, measured)");
}

double CostCurve::seconds(double work) const {
  AOTGRAD_CHECK(!points.empty(), "cost curve without points");
  if (work <= points.front().first) return points.front().second;
  for (size_t i = 1; i < points.size(); ++i) {
    auto [w0, s0] = points[i - 1];
    auto [w1, s1] = points[i];
    if (work > w1) continue;
    if (s0 <= 0 || s1 <= 0) return s0 + (s1 - s0) * (work - w0) / (w1 - w0);
    double t = (std::log(work) - std::log(w0)) / (std::log(w1) - std::log(w0));
    return std::exp(std::log(s0) + t * (std::log(s1) - std::log(s0)));
  }
  auto [w, s] = points.back();
  return s * work / w;
}

std::string cost_profile_json(const CostProfile& p) {
  nlohmann::ordered_json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["machine"] = p.machine;
  j["threads"] = p.threads;
  j["matmul"] = curve_json(p.matmul);
  j["convolution"] = curve_json(p.convolution);
  j["memory"] = curve_json(p.memory);
  nlohmann::ordered_json ops = nlohmann::ordered_json::object();
  for (const auto& [op, curve] : p.ops) ops[op] = curve_json(curve);
  j["ops"] = ops;
  return j.dump(1) + "\n";
}

CostProfile parse_cost_profile(std::string_view text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    bad(where, std::string("not JSON (") + e.what() + ")");
  }
  if (!j.is_object() || j.value("format", std::string()) != kFormat)
    bad(where, std::string("not a cost profile (no \"format\": \"") + kFormat + "\")");
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      (j["version"].get<int>() != 1 && j["version"].get<int>() != kVersion))
    bad(where, "version is not 1 or " + std::to_string(kVersion));
  const int version = j["version"].get<int>();
  CostProfile p;
  if (j.contains("machine") && j["machine"].is_string()) p.machine = j["machine"];
  if (j.contains("threads") && j["threads"].is_number_integer()) p.threads = j["threads"];
  p.matmul = parse_curve(j, "matmul", where);
  p.convolution = parse_curve(j, "convolution", where);
  p.memory = parse_curve(j, "memory", where);
  if (version >= 2) {
    if (!j.contains("ops") || !j["ops"].is_object())
      bad(where, "'ops' is not an object of op name to [work, seconds] points");
    for (const auto& [op, points] : j["ops"].items()) p.ops[op] = parse_curve(j["ops"], op, where);
  }
  return p;
}

CostProfile read_cost_profile(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error& e) {
    throw Error("cost profile: " + e.message() + " (run `aotgrad calibrate` to measure one)");
  }
  return parse_cost_profile(text, path);
}

std::string default_cost_profile_path() {
  if (const char* env = std::getenv("AOTGRAD_COST_PROFILE"); env && *env) return env;
  std::string dir = user_cache_dir();
  return dir.empty() ? "" : dir + "/cost_profile.json";
}

std::string CostModel::fingerprint() const {
  if (kind == CostModelKind::kFlops) return "flops";
  AOTGRAD_CHECK(profile != nullptr, "the measured cost model has no profile");
  return "measured:" + sha256_hex(cost_profile_json(*profile));
}

double call_flops(const Node& n) {
  if (n.kind() != NodeKind::Call) return 0;
  std::string_view p = OpClasses::packet(n);
  if (p == "aten::mm" || p == "aten::bmm") {
    if (auto* a = tensor_arg(n, 0), *b = tensor_arg(n, 1); a && b) return matmul_flops(*a, *b);
  } else if (p == "aten::addmm" || p == "aten::baddbmm") {
    if (auto* a = tensor_arg(n, 1), *b = tensor_arg(n, 2); a && b) return matmul_flops(*a, *b);
  } else if (p == "aten::convolution") {
    // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups): each
    // output element of a convolution (each input element of a transposed one) takes one
    // multiply-add per weight element of its channel.
    const TensorMeta* x = tensor_arg(n, 0);
    const TensorMeta* w = tensor_arg(n, 1);
    bool transposed = n.args().size() > 6 && n.args()[6].i != 0;
    if (x && w && n.meta().is_tensor())
      return 2 * (transposed ? numel(*x) : numel(n.meta().tensor)) * per_output_channel(*w);
  } else if (p == "aten::convolution_backward") {
    // (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    // output_padding, groups, output_mask): grad_input and grad_weight each cost one convolution.
    const TensorMeta* gy = tensor_arg(n, 0);
    const TensorMeta* x = tensor_arg(n, 1);
    const TensorMeta* w = tensor_arg(n, 2);
    bool transposed = n.args().size() > 7 && n.args()[7].i != 0;
    if (gy && x && w) {
      double conv = 2 * (transposed ? numel(*x) : numel(*gy)) * per_output_channel(*w);
      int convs = 2;
      if (n.args().size() > 10 && n.args()[10].is_list()) {
        const auto& mask = n.args()[10].list;
        convs = (mask.size() > 0 && mask[0].i != 0) + (mask.size() > 1 && mask[1].i != 0);
      }
      return conv * convs;
    }
  }
  return 0;
}

double call_bytes(const Node& n) {
  double bytes = 0;
  for_each_tensor(n, [&](const TensorMeta& t) {
    bytes += numel(t) * static_cast<double>(element_size(t.dtype));
  });
  return bytes;
}

double communication_bytes(const Node& n) {
  if (n.kind() != NodeKind::Call || !OpClasses::defaults().is_collective(n)) return 0;
  auto bytes = [](const TensorMeta& t) {
    return numel(t) * static_cast<double>(element_size(t.dtype));
  };
  const std::string& op = n.op()->name;
  const TensorMeta* in = tensor_arg(n, 0);
  if (op == "_c10d_functional::all_gather_into_tensor")
    return n.meta().is_tensor() ? bytes(n.meta().tensor) : 0;
  if (!in || op == "_c10d_functional::wait_tensor") return 0;
  if (op == "_c10d_functional::all_reduce" || op == "_c10d_functional::all_reduce_")
    return 2 * bytes(*in);
  return bytes(*in);
}

double estimate_runtime(const Node& n, const CostModel& model) {
  if (n.kind() == NodeKind::Call && OpClasses::defaults().is_collective(n)) {
    const double b = communication_bytes(n);
    if (model.kind == CostModelKind::kFlops) return std::max(b * kFlopsPerCommunicatedByte, 1.0);
    return b / kCommunicatedBytesPerSecond;
  }
  if (model.kind == CostModelKind::kFlops) {
    if (n.kind() != NodeKind::Call) return 1;
    std::string_view p = OpClasses::packet(n);
    double flops = is_matmul(p) || is_convolution(p) ? call_flops(n) : largest_element_count(n);
    return std::max(flops, 1.0);
  }
  AOTGRAD_CHECK(model.profile != nullptr, "the measured cost model has no profile");
  if (n.kind() != NodeKind::Call) return 0;
  const CostProfile& prof = *model.profile;
  std::string_view p = OpClasses::packet(n);
  if (is_matmul(p)) return prof.matmul.seconds(call_flops(n));
  if (is_convolution(p)) return prof.convolution.seconds(call_flops(n));
  if (OpClasses::defaults().is_view(n)) return prof.memory.seconds(0);
  if (auto it = prof.ops.find(p); it != prof.ops.end()) return it->second.seconds(call_bytes(n));
  return prof.memory.seconds(call_bytes(n));
}

}  // namespace aotgrad

// aotgrad: what a call costs -- FLOPs from metadata, or seconds from a measured cost profile.
#include "aotgrad/transforms/partition/cost_model.h"

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

double numel(const TensorMeta& t) { return static_cast<double>(t.numel().hint_or(4096)); }

// A call's arguments, as its op's formulas read them.
MetaArgs args_of(const Node& n) { return MetaArgs(*n.op(), n.args()); }

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

// The measured curve of an op with a FLOPs formula.
const CostCurve& flops_curve(const CostProfile& p, const OpDef& op) {
  return op.flops_kind == FlopsKind::kConvolution ? p.convolution : p.matmul;
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
  if (n.kind() != NodeKind::Call || !n.op()->flops) return 0;
  return n.op()->flops(args_of(n), n.meta());
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
  const CallFormula f = n.op()->communication_bytes;
  return f ? f(args_of(n), n.meta()) : 0;
}

double estimate_runtime(const Node& n, const CostModel& model) {
  if (n.kind() == NodeKind::Call && OpClasses::defaults().is_collective(n)) {
    const double b = communication_bytes(n);
    if (model.kind == CostModelKind::kFlops) return std::max(b * kFlopsPerCommunicatedByte, 1.0);
    return b / kCommunicatedBytesPerSecond;
  }
  if (model.kind == CostModelKind::kFlops) {
    if (n.kind() != NodeKind::Call) return 1;
    double flops = n.op()->flops ? call_flops(n) : largest_element_count(n);
    return std::max(flops, 1.0);
  }
  AOTGRAD_CHECK(model.profile != nullptr, "the measured cost model has no profile");
  if (n.kind() != NodeKind::Call) return 0;
  const CostProfile& prof = *model.profile;
  if (n.op()->flops) return flops_curve(prof, *n.op()).seconds(call_flops(n));
  if (OpClasses::defaults().is_view(n)) return prof.memory.seconds(0);
  std::string_view p = OpClasses::packet(n);
  if (auto it = prof.ops.find(p); it != prof.ops.end()) return it->second.seconds(call_bytes(n));
  return prof.memory.seconds(call_bytes(n));
}

}  // namespace aotgrad

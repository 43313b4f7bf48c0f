// aotgrad: the registry's meta-correctness sweep -- every op sample in tests/data/op_samples/*.txt
// is run through aotgrad's meta function and through libtorch, and the results must agree.
//
// Each sample line becomes a one-node graph in the text form, e.g. for
//   add.Tensor(f32[4, 1], f32[1, 5][1, 1], alpha=2)
// the graph
//   def forward(self, t0: "f32[4, 1][1, 1]cpu", t1: "f32[1, 5][1, 1]cpu"):
//       result: "f32[]" = torch.ops.aten.add.Tensor(t0, t1, alpha=2)
//       return (result,)
// is parsed (the placeholder annotation makes the parser bind the arguments without inferring, so
// that a binding error -- a broken sample -- is told apart from the meta function's own error),
// aotgrad's meta comes from infer_meta on the bound arguments, and the op runs on real tensors made
// with at::empty_strided through aten_call. Dtype, sizes, strides and storage offset of every
// tensor result are compared. One test per family file (MetaSweep.Pointwise, ...) reports every
// disagreement of its file at the sample's file:line; MetaSweep.EveryOpHasSamples names each
// registered op without a sample. The sample format is described in tests/data/README.md.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"
#include "op_samples.h"
#include "sample_inputs.h"

namespace aotgrad {
namespace {

namespace fs = std::filesystem;

// The sample files are read by tests/runtime/op_samples.h (shared with the gradient sweep and the
// registry test).
using op_samples::camel;
using op_samples::fnv1a;
using op_samples::parse_sample;
using op_samples::read_sample_file;
using op_samples::Sample;
using op_samples::sample_files;
using op_samples::SampleFile;
using op_samples::samples_dir;
using op_samples::Skip;
using op_samples::TensorSpec;

// --- running one sample
// ---------------------------------------------------------------------------

std::string layout_text(const TensorMeta& m) {
  std::string s = m.annotation();
  if (!(m.storage_offset == 0)) s += " offset " + m.storage_offset.to_string();
  return s;
}

// Whether the strides differ where they matter: as torch._prims_common.check_significant_strides,
// a dimension of size 1 (or a tensor without elements) may have any stride, and libtorch's
// kernels do not agree among themselves there (a 1x1 convolution output's strides depend on the
// machine's convolution backend).
bool significant_strides_differ(const TensorMeta& a, const TensorMeta& b) {
  if (a.sizes != b.sizes || a.strides.size() != b.strides.size()) return true;
  for (const SymInt& s : a.sizes)
    if (s == 0) return false;
  for (size_t d = 0; d < a.sizes.size(); ++d)
    if (!(a.sizes[d] == 1) && a.strides[d] != b.strides[d]) return true;
  return false;
}

// Compares aotgrad's meta with a libtorch result; appends a line per difference.
// With `meta_kernel`, `got` comes from libtorch's Meta kernel: its device is meta, not compared.
void compare(const ValueMeta& expected, const c10::IValue& got, const std::string& what,
             std::vector<std::string>& diffs, bool meta_kernel = false) {
  bool got_none = got.isNone() || (got.isTensor() && !got.toTensor().defined());
  if (got_none) {
    if (expected.kind != ValueMeta::Kind::None)
      diffs.push_back(what + ": aotgrad " + expected.describe() + ", libtorch None/undefined");
    return;
  }
  if (got.isTensor()) {
    if (!expected.is_tensor()) {
      diffs.push_back(what + ": aotgrad " + expected.describe() + ", libtorch tensor " +
                      layout_text(tensor_meta_of(got.toTensor())));
      return;
    }
    TensorMeta g = tensor_meta_of(got.toTensor());
    const TensorMeta& e = expected.tensor;
    std::vector<std::string> parts;
    if (e.dtype != g.dtype) parts.push_back("dtype");
    if (e.sizes != g.sizes) parts.push_back("sizes");
    if (e.sizes == g.sizes && significant_strides_differ(e, g)) parts.push_back("strides");
    if (e.storage_offset != g.storage_offset) parts.push_back("storage offset");
    if (!meta_kernel && !(e.device == g.device)) parts.push_back("device");
    if (!parts.empty()) {
      std::string which;
      for (auto& p : parts) which += (which.empty() ? "" : ", ") + p;
      diffs.push_back(what + ": aotgrad " + layout_text(e) + ", libtorch " + layout_text(g) + " (" +
                      which + " differ)");
    }
    return;
  }
  if (got.isList() || got.isTuple()) {
    std::vector<c10::IValue> elems;
    if (got.isTuple()) {
      for (const auto& e : got.toTupleRef().elements()) elems.push_back(e);
    } else {
      for (const c10::IValue& e : got.toListRef()) elems.push_back(e);
    }
    if (expected.kind != ValueMeta::Kind::Tuple || expected.elems.size() != elems.size()) {
      diffs.push_back(what + ": aotgrad " + expected.describe() + ", libtorch a " +
                      (got.isTuple() ? "tuple" : "list") + " of " + std::to_string(elems.size()));
      return;
    }
    for (size_t i = 0; i < elems.size(); ++i)
      compare(expected.elems[i], elems[i], what + "[" + std::to_string(i) + "]", diffs,
              meta_kernel);
    return;
  }
  if (got.isInt()) {
    if (expected.kind != ValueMeta::Kind::SymInt || !(expected.sym == got.toInt()))
      diffs.push_back(what + ": aotgrad " + expected.describe() + ", libtorch int " +
                      std::to_string(got.toInt()));
    return;
  }
  if (got.isDouble() || got.isBool()) {
    auto kind = got.isDouble() ? ValueMeta::Kind::SymFloat : ValueMeta::Kind::SymBool;
    if (expected.kind != kind)
      diffs.push_back(what + ": aotgrad " + expected.describe() + ", libtorch " + got.tagKind());
    return;
  }
  diffs.push_back(what + ": libtorch returned a " + got.tagKind() +
                  ", which the sweep cannot compare");
}

// The annotation on `result` is a stand-in: it keeps the parser from inferring the metadata.
std::string graph_text(const Sample& s, const OpDef& op) {
  return op_samples::graph_text(s, op.short_name, "f32[]");
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string describe_meta(const ValueMeta& m) {
  if (m.is_tensor()) return layout_text(m.tensor);
  if (m.kind == ValueMeta::Kind::Tuple) {
    std::string s = "(";
    for (size_t i = 0; i < m.elems.size(); ++i) s += (i ? ", " : "") + describe_meta(m.elems[i]);
    return s + (m.elems.size() == 1 ? ",)" : ")");
  }
  return m.describe();
}

// The same tensor on libtorch's meta device: same sizes, strides and storage offset.
at::Tensor to_meta(const at::Tensor& t) {
  int64_t elems = static_cast<int64_t>(t.storage().nbytes()) / t.element_size();
  at::Tensor base = at::empty({elems}, t.options().device(at::kMeta));
  return base.as_strided(t.sizes(), t.strides(), t.storage_offset());
}

// Compares aotgrad's meta with all of an op's results; appends a line per difference.
void compare_results(const OpDef& op, const ValueMeta& meta,
                     const std::vector<c10::IValue>& results, std::vector<std::string>& diffs,
                     bool meta_kernel) {
  size_t nret = op.schema.returns.size();
  if (results.size() != nret) {
    diffs.push_back("internal: libtorch returned " + std::to_string(results.size()) + " values");
  } else if (nret == 0) {
    if (meta.kind != ValueMeta::Kind::None)
      diffs.push_back("aotgrad " + meta.describe() + ", the op returns nothing");
  } else if (nret == 1) {
    compare(meta, results[0], "result", diffs, meta_kernel);
  } else if (meta.kind != ValueMeta::Kind::Tuple || meta.elems.size() != nret) {
    diffs.push_back("aotgrad " + meta.describe() + ", the op returns " + std::to_string(nret) +
                    " values");
  } else {
    for (size_t i = 0; i < nret; ++i)
      compare(meta.elems[i], results[i], "result " + std::to_string(i), diffs, meta_kernel);
  }
}

// What libtorch's Meta kernel said about a sample aotgrad and the CPU kernel agree on.
struct MetaKernelCheck {
  enum class Outcome { kNotRun, kAgrees, kDiffers, kNoResult } outcome = Outcome::kNotRun;
  std::vector<std::string> diffs;  // kDiffers
  std::string error;               // kNoResult: the Meta call's error (no Meta kernel, ...)
};

// Runs one sample; returns the problems found (empty: aotgrad and libtorch agree). With
// `meta_check`, a sample whose CPU result aotgrad matches also runs on meta tensors, through
// libtorch's Meta kernel (or its composite kernel's Meta calls), and records the comparison.
std::vector<std::string> run_sample(const Sample& s, const std::set<std::string>& skipped,
                                    const std::string& file,
                                    MetaKernelCheck* meta_check = nullptr) {
  const OpDef* op = aten_ops().find(s.op_name);
  if (!op) return {"unknown op '" + s.op_name + "': aotgrad's registry has no such overload"};
  std::string text = graph_text(s, *op);
  std::unique_ptr<Graph> g;
  try {
    g = parse_graph(text, aten_ops());
  } catch (const Error& e) {
    return {"the sample does not bind to " + op->schema.text + ": " + e.message()};
  }
  Node* node = g->find("result");
  if (!node || node->kind() != NodeKind::Call)
    return {"internal: the sample graph has no call node 'result'"};

  // aotgrad's meta.
  std::optional<ValueMeta> meta;
  std::string meta_error;
  try {
    meta = infer_meta(*op, node->args());
  } catch (const Error& e) {
    meta_error = e.message();
  } catch (const std::exception& e) {
    return {std::string("aotgrad's meta function threw a non-aotgrad::Error exception: ") +
            e.what()};
  }

  if (skipped.count(op->name) || s.libtorch_crashes) {
    if (s.must_fail && meta)
      return {"aotgrad inferred " + describe_meta(*meta) + " but the sample must fail"};
    if (!s.must_fail && !meta) return {"aotgrad raised: " + meta_error};
    return {};
  }

  // libtorch's result.
  at::Generator gen = at::detail::createCPUGenerator(fnv1a(file) ^ static_cast<uint64_t>(s.line));
  std::map<const Node*, c10::IValue> values, meta_values;
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    Node* p = g->find("t" + std::to_string(i));
    at::Tensor t = make_input(s.tensors[i], s.tensors[i].meta.dtype, gen);
    meta_values[p] = to_meta(t);
    values[p] = t;
  }
  std::vector<c10::IValue> results;
  std::string torch_error;
  try {
    const AtenOp& aop = aten_op(*op);
    try {
      results = aop.call(node->args(), [&](const Node& n) { return values.at(&n); });
    } catch (const Error& e) {
      torch_error = first_line(e.message());
      if (torch_error.empty()) torch_error = "(empty message)";
    }
  } catch (const Error& e) {  // the op cannot be resolved in libtorch
    return {e.message() + " (add '@skip " + op->short_name +
            ": <reason>' if libtorch 1.13 lacks it)"};
  }

  if (s.must_fail) {
    std::vector<std::string> out;
    if (meta)
      out.push_back("aotgrad inferred " + describe_meta(*meta) + " but the sample must fail");
    if (torch_error.empty()) out.push_back("libtorch did not raise, but the sample must fail");
    return out;
  }
  if (!meta && !torch_error.empty())
    return {"both raised, but the sample is not marked '!': aotgrad: " + meta_error +
            "; libtorch: " + torch_error};
  if (!meta) return {"aotgrad raised but libtorch did not: " + meta_error};
  if (!torch_error.empty())
    return {"libtorch raised but aotgrad inferred " + describe_meta(*meta) + ": " + torch_error};

  std::vector<std::string> diffs;
  compare_results(*op, *meta, results, diffs, /*meta_kernel=*/false);
  if (!diffs.empty() || !meta_check) return diffs;

  // libtorch's Meta kernel on the same inputs.
  std::vector<c10::IValue> meta_results;
  try {
    meta_results =
        aten_op(*op).call(node->args(), [&](const Node& n) { return meta_values.at(&n); });
  } catch (const Error& e) {
    meta_check->outcome = MetaKernelCheck::Outcome::kNoResult;
    meta_check->error = first_line(e.message());
    return diffs;
  }
  compare_results(*op, *meta, meta_results, meta_check->diffs, /*meta_kernel=*/true);
  meta_check->outcome = meta_check->diffs.empty() ? MetaKernelCheck::Outcome::kAgrees
                                                  : MetaKernelCheck::Outcome::kDiffers;
  return diffs;
}

std::set<std::string> all_skipped_ops() {
  std::set<std::string> out;
  for (const auto& p : sample_files())
    for (const auto& sk : read_sample_file(p).skips)
      if (const OpDef* op = aten_ops().find(sk.op_name)) out.insert(op->name);
  return out;
}

// --- the tests
// ------------------------------------------------------------------------------------

void check_family_file(const fs::path& path) {
  c10::NoGradGuard no_grad;
  SampleFile f = read_sample_file(path);
  std::string file = path.string();
  std::string name = path.filename().string();
  int bad = 0;
  for (auto& [line, msg] : f.errors) {
    ADD_FAILURE_AT(file.c_str(), line) << name << ":" << line << ": malformed line: " << msg;
    ++bad;
  }
  for (const Skip& sk : f.skips) {
    const OpDef* op = aten_ops().find(sk.op_name);
    if (!op) {
      ADD_FAILURE_AT(file.c_str(), sk.line)
          << name << ":" << sk.line << ": @skip names unknown op '" << sk.op_name << "'";
      ++bad;
      continue;
    }
    // A skip is for ops aten_call cannot call in libtorch 1.13 (missing or different schema), and
    // for collectives, which need a process group.
    bool callable = !op->has_tag(kCollective);
    try {
      if (callable) aten_op(*op);
    } catch (const Error&) {
      callable = false;
    }
    if (callable) {
      ADD_FAILURE_AT(file.c_str(), sk.line)
          << name << ":" << sk.line << ": @skip " << sk.op_name
          << ": libtorch has this op with a compatible schema -- compare it instead of skipping";
      ++bad;
    }
  }
  std::set<std::string> skipped = all_skipped_ops();
  for (const Sample& s : f.samples) {
    std::vector<std::string> problems = run_sample(s, skipped, file);
    if (problems.empty()) continue;
    ++bad;
    std::string msg =
        name + ":" + std::to_string(s.line) + ": " + (s.must_fail ? "!" : "") + s.text;
    for (auto& p : problems) msg += "\n    " + p;
    ADD_FAILURE_AT(file.c_str(), s.line) << msg;
  }
  if (bad)
    ADD_FAILURE() << bad << " of " << f.samples.size() + f.skips.size() + f.errors.size()
                  << " lines of " << name << " failed (see above)";
  std::cout << "[ sweep    ] " << name << ": " << f.samples.size() << " samples, " << f.skips.size()
            << " skips, " << bad << " failing\n";
}

// The Meta call's error, short: libtorch's "attempted to run this operator with Meta tensors" names
// the op without a Meta kernel (abs's is abs.out's), then points at a tutorial.
std::string meta_error_summary(const std::string& e) {
  const std::string marker = ": attempted to run this operator with Meta tensors";
  size_t at = e.find(marker);
  if (at == std::string::npos) return e.substr(0, 100);
  size_t from = e.rfind(": ", at == 0 ? 0 : at - 1);
  std::string inner =
      from == std::string::npos ? e.substr(0, at) : e.substr(from + 2, at - from - 2);
  return "no Meta kernel for " + inner;
}

// Samples on which libtorch's Meta kernel and its CPU kernel disagree; aotgrad follows the CPU
// kernel, which is the one that runs. Each entry is the sample's text and the reason.
const std::map<std::string, std::string>& meta_kernel_known_differences() {
  static const std::map<std::string, std::string> known = {
      {"native_layer_norm.default(f32[3, 0, 4], [4], None, None, 1e-05)",
       "without elements, libtorch's Meta path gives mean and rstd the input's sizes, [3, 0, 4]; "
       "its CPU kernel gives [3, 0, 1], as for any input"},
  };
  return known;
}

// Every hand-declared meta function against libtorch's Meta kernel (issue 41): the samples on
// which aotgrad and the CPU kernel agree run again on meta tensors, and the Meta kernel's dtype,
// sizes, strides and storage offset must agree too. An op the Meta call refuses (no Meta kernel,
// a data-dependent size) is counted and listed, not failed: the CPU comparison covers it.
TEST(MetaSweep, AgainstMetaKernels) {
  c10::NoGradGuard no_grad;
  std::set<std::string> skipped = all_skipped_ops();
  std::map<std::string, std::string> no_result;  // op -> the Meta call's error
  std::set<std::string> ops_checked;
  int agree = 0, differ = 0, known = 0;
  for (const auto& path : sample_files()) {
    SampleFile f = read_sample_file(path);
    std::string file = path.string(), name = path.filename().string();
    for (const Sample& s : f.samples) {
      if (s.must_fail) continue;
      MetaKernelCheck check;
      if (!run_sample(s, skipped, file, &check).empty()) continue;  // MetaSweep.<Family> reports
      switch (check.outcome) {
        case MetaKernelCheck::Outcome::kNotRun: break;
        case MetaKernelCheck::Outcome::kAgrees:
          ++agree;
          ops_checked.insert(s.op_name);
          break;
        case MetaKernelCheck::Outcome::kNoResult:
          no_result.emplace(s.op_name, meta_error_summary(check.error));
          break;
        case MetaKernelCheck::Outcome::kDiffers: {
          if (meta_kernel_known_differences().count(s.text)) {
            ++known;
            break;
          }
          ++differ;
          std::string msg = name + ":" + std::to_string(s.line) + ": " + s.text +
                            "\n    aotgrad and the CPU kernel agree; libtorch's Meta kernel:";
          for (auto& d : check.diffs) msg += "\n    " + d;
          ADD_FAILURE_AT(file.c_str(), s.line) << msg;
          break;
        }
      }
    }
  }
  for (const std::string& op : ops_checked) no_result.erase(op);
  std::cout << "[ sweep    ] Meta kernels: " << agree << " samples of " << ops_checked.size()
            << " ops agree, " << differ << " differ (and " << known
            << " known differences of libtorch's Meta and CPU kernels); " << no_result.size()
            << " ops without a Meta result on their samples:\n";
  for (auto& [op, why] : no_result) std::cout << "[ sweep    ]   " << op << ": " << why << "\n";
  EXPECT_GT(agree, 0);
  EXPECT_EQ(known, static_cast<int>(meta_kernel_known_differences().size()))
      << "a known difference no longer shows: remove it from meta_kernel_known_differences()";
}

TEST(MetaSweep, EveryOpHasSamples) {
  std::map<std::string, int> sampled, fail_only;
  std::set<std::string> skipped;
  for (const auto& p : sample_files()) {
    SampleFile f = read_sample_file(p);
    for (const Sample& s : f.samples)
      if (const OpDef* op = aten_ops().find(s.op_name))
        (s.must_fail ? fail_only : sampled)[op->name]++;
    for (const Skip& sk : f.skips)
      if (const OpDef* op = aten_ops().find(sk.op_name)) skipped.insert(op->name);
  }
  std::vector<std::string> missing, only_failing;
  for (const OpDef* op : aten_ops().all()) {
    if (sampled.count(op->name) || skipped.count(op->name)) continue;
    (fail_only.count(op->name) ? only_failing : missing).push_back(op->short_name);
  }
  std::string list;
  for (auto& m : missing) list += "\n    " + m;
  EXPECT_TRUE(missing.empty()) << missing.size() << " of " << aten_ops().all().size()
                               << " registered ops have no sample line in "
                               << samples_dir().string() << "/*.txt:" << list;
  list.clear();
  for (auto& m : only_failing) list += "\n    " + m;
  EXPECT_TRUE(only_failing.empty())
      << only_failing.size() << " ops have only '!' (must-fail) samples:" << list;
}

// The sample-line reader itself.
TEST(MetaSweep, ReadsSampleSyntax) {
  Sample s = parse_sample("gather(f32[4, 5][1, 4], -1, i64[4, 2]{0:5}, sparse_grad=False)");
  EXPECT_EQ(s.op_name, "gather");
  EXPECT_EQ(s.args, "t0, -1, t1, sparse_grad=False");
  ASSERT_EQ(s.tensors.size(), 2u);
  EXPECT_EQ(s.tensors[0].meta.annotation(), "f32[4, 5][1, 4]cpu");
  EXPECT_EQ(s.tensors[1].meta.annotation(), "i64[4, 2][2, 1]cpu");
  ASSERT_TRUE(s.tensors[1].range);
  EXPECT_EQ(s.tensors[1].range->second, 5);
  Sample l = parse_sample("cat([f32[2, 3], b8[]], dtype=torch.float32, name='f32[1]')");
  EXPECT_EQ(l.args, "[t0, t1], dtype=torch.float32, name='f32[1]'");
  EXPECT_EQ(l.tensors[1].meta.annotation(), "b8[][]cpu");
  EXPECT_THROW(parse_sample("add.Tensor(f32[2, 3][1], f32[3])"), Error);
  EXPECT_THROW(parse_sample("add.Tensor(f32[2, x])"), Error);
  EXPECT_THROW(parse_sample("add.Tensor f32[2]"), Error);

  // Inputs follow the annotation, with every storage element written.
  at::Generator gen = at::detail::createCPUGenerator(1);
  TensorSpec spec = parse_sample("x(i64[3, 4][1, 3]{5:7})").tensors[0];
  at::Tensor t = make_input(spec, spec.meta.dtype, gen);
  EXPECT_EQ(t.strides(), at::IntArrayRef({1, 3}));
  EXPECT_GE(t.min().item<int64_t>(), 5);
  EXPECT_LT(t.max().item<int64_t>(), 7);
  at::Tensor e =
      make_input(parse_sample("x(f32[3, 4][0, 1])").tensors[0], ScalarType::Float32, gen);
  EXPECT_EQ(e.strides(), at::IntArrayRef({0, 1}));
}

// One test per family file, registered from the directory listing: MetaSweep.Pointwise, ...
class FamilyTest : public testing::Test {
 public:
  explicit FamilyTest(fs::path path) : path_(std::move(path)) {}
  void TestBody() override { check_family_file(path_); }

 private:
  fs::path path_;
};

const bool kRegistered = [] {
  for (const auto& p : sample_files()) {
    std::string test_name = camel(p.stem().string());
    testing::RegisterTest("MetaSweep", test_name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [p]() -> testing::Test* { return new FamilyTest(p); });
  }
  return true;
}();

}  // namespace
}  // namespace aotgrad

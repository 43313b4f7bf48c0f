// aotgrad: every decomposition against the op it replaces, on the op samples of
// tests/data/op_samples/*.txt. For each valid sample of an op that has a decomposition, the
// one-node graph runs on the interpreter (which calls the op's ATen kernel) and so does the graph
// after decompose(); results must have the same dtype, sizes and strides and equal values (random
// ops run from the same generator state, so bit for bit). Gradients through decompositions are
// checked by GradSweep, which differentiates composite ops through them.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/decomposition.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiler.h"
#include "aotgrad/runtime/interpreter.h"
#include "aotgrad/transforms/decompose.h"
#include "op_samples.h"
#include "sample_inputs.h"

namespace aotgrad {
namespace {

namespace os = op_samples;

std::vector<c10::IValue> run(const std::shared_ptr<const Graph>& g, const std::vector<at::Tensor>& inputs, uint64_t seed) {
  Interpreter interp(g);
  std::vector<c10::IValue> in;
  for (const at::Tensor& t : inputs) in.push_back(t.clone(at::MemoryFormat::Preserve));
  at::manual_seed(seed);
  return interp.run(std::move(in));
}

std::string compare(const at::Tensor& want, const at::Tensor& got) {
  if (want.scalar_type() != got.scalar_type())
    return std::string("dtype ") + c10::toString(got.scalar_type()) + ", the op gives " + c10::toString(want.scalar_type());
  if (want.sizes() != got.sizes()) return "sizes differ";
  if (want.numel() > 1 && want.strides() != got.strides()) {
    std::ostringstream s;
    s << "strides " << got.strides() << ", the op gives " << want.strides();
    return s.str();
  }
  bool equal = want.is_floating_point() ? at::allclose(want, got, 1e-5, 1e-6, /*equal_nan=*/true) : at::equal(want, got);
  if (!equal) return "values differ (max abs diff " + std::to_string((want.to(at::kDouble) - got.to(at::kDouble)).abs().max().item<double>()) + ")";
  return "";
}

TEST(DecompSweep, EveryDecompositionMatchesItsOp) {
  register_compat_ops();
  std::map<std::string, int> checked;  // op -> samples checked
  std::vector<std::string> failures;
  for (const auto& path : os::sample_files()) {
    os::SampleFile file = os::read_sample_file(path);
    std::string fname = path.filename().string();
    for (const os::Sample& s : file.samples) {
      if (s.must_fail) continue;
      const OpDef* op = aten_ops().find(s.op_name);
      if (!op || !op->decomposition) continue;
      std::string where = fname + ":" + std::to_string(s.line) + ": " + s.text + "\n    ";
      std::shared_ptr<Graph> g;
      try {
        g = parse_graph(os::graph_text(s, op->short_name), aten_ops());
      } catch (const Error&) {
        continue;  // aotgrad rejects the sample (MetaSweep reports disagreements)
      }
      uint64_t seed = os::fnv1a(fname) ^ static_cast<uint64_t>(s.line);
      at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
      std::vector<at::Tensor> inputs;
      for (const auto& spec : s.tensors) inputs.push_back(os::make_input(spec, spec.meta.dtype, gen));
      std::vector<c10::IValue> want;
      try {
        want = run(g, inputs, seed);
      } catch (const std::exception&) {
        continue;  // libtorch rejects the values (MetaSweep checks validity)
      }
      std::unique_ptr<Graph> d = g->clone();
      try {
        decompose(*d, DecompositionTable::composite_implicit());
        verify(*d);
        for (const Node* n : d->nodes())
          AOTGRAD_CHECK(n->kind() != NodeKind::Call || !n->op()->has_tag(kCompositeImplicit), "decomposed graph still calls ",
                        n->op()->name);
      } catch (const Error& e) {
        failures.push_back(where + "decompose: " + e.message());
        continue;
      }
      std::vector<c10::IValue> got;
      try {
        got = run(std::shared_ptr<const Graph>(std::move(d)), inputs, seed);
      } catch (const std::exception& e) {
        failures.push_back(where + "the decomposed graph fails: " + e.what());
        continue;
      }
      std::string problem = got.size() == want.size() ? "" : "different number of results";
      for (size_t k = 0; problem.empty() && k < want.size(); ++k)
        problem = compare(want[k].toTensor(), got[k].toTensor());
      if (!problem.empty()) failures.push_back(where + problem);
      else checked[op->short_name]++;
    }
  }
  std::string list;
  for (auto& f : failures) list += "\n  " + f;
  EXPECT_TRUE(failures.empty()) << failures.size() << " samples where the decomposition differs from the op:" << list;
  std::vector<std::string> unchecked;
  for (const OpDef* op : aten_ops().all())
    if (op->decomposition && !checked.count(op->short_name)) unchecked.push_back(op->short_name);
  EXPECT_TRUE(unchecked.empty()) << "ops whose decomposition no sample checks: " << ::testing::PrintToString(unchecked);
  int total = 0;
  for (auto& [op, n] : checked) total += n;
  std::cout << "[ decomp   ] " << total << " samples of " << checked.size() << " ops checked, " << failures.size()
            << " failing\n";
}

}  // namespace
}  // namespace aotgrad

// Tests for arguments that are views of one storage (§13.23): training keeps unwritten overlapping
// views as independent inputs (PyTorch's merge_view_inputs happy path) and gives written ones a
// synthetic base (AOTSyntheticBaseWrapper: their autograd base, regenerated with as_strided), with
// clear errors where no base can serve; the export path raises on overlapping views that the graph
// writes, as PyTorch's.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "../error_of.h"
#include "aotgrad/aotgrad.h"
#include "aotgrad/ir/printer.h"

namespace aotgrad {
namespace {

std::vector<at::Tensor> product_sum(const std::vector<at::Tensor>& in) {
  return {(in[0] * in[1]).sum()};
}

std::vector<at::Tensor> write_first(const std::vector<at::Tensor>& in) {
  at::Tensor x = in[0];
  x.mul_(2);
  return {x + in[1]};
}

TEST(AliasedInputs, UnwrittenOverlappingSlicesOfOneParameterTrain) {
  at::Tensor p = at::randn({10}).requires_grad_();
  AOTFunction f = aot_function(product_sum);
  at::Tensor loss = f({p.slice(0, 0, 6), p.slice(0, 4, 10)})[0];
  loss.backward();
  at::Tensor got = p.grad().clone();
  EXPECT_EQ(f.trains({p.slice(0, 0, 6), p.slice(0, 4, 10)}), std::optional<bool>(true));
  p.mutable_grad() = at::Tensor();
  product_sum({p.slice(0, 0, 6), p.slice(0, 4, 10)})[0].backward();
  EXPECT_TRUE(at::allclose(got, p.grad(), 1e-6, 1e-6)) << got << p.grad();
  EXPECT_TRUE(at::allclose(loss, product_sum({p.slice(0, 0, 6), p.slice(0, 4, 10)})[0]));
}

std::vector<at::Tensor> write_first_scaled(const std::vector<at::Tensor>& in) {
  return {write_first(in)[0] * in[2]};
}

// The ops of a graph's calls, in order.
std::vector<std::string> call_ops(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call) ops.push_back(n->op()->name);
  return ops;
}

// Records the forward graphs a backend receives and runs them on the interpreter.
class RecordingCompiler final : public Compiler {
 public:
  std::string name() const override { return "recording"; }
  CompiledFn compile(std::shared_ptr<const Graph> graph) const override {
    graphs.push_back(graph);
    return default_compiler()->compile(graph);
  }
  mutable std::vector<std::shared_ptr<const Graph>> graphs;
};

// The seed's f(x, y): x.mul_(2); return x + y, on f(h[:6], h[4:]) with h = w * 3 a non-leaf that
// requires grad: trained as eagerly (output, h written through x, w's gradient through both the
// output and the write), the compiled forward taking h alone (§13.23's graph).
TEST(AliasedInputs, Seed13_23_WrittenOverlappingViewsTrainThroughTheirBase) {
  at::Tensor w = at::randn({10}).requires_grad_(), g = at::randn({6});
  auto record = std::make_shared<RecordingCompiler>();
  AOTConfig config;
  config.fw_compiler = record;
  AOTFunction f = aot_function(write_first, config);
  at::Tensor h = w * 3;
  at::Tensor out = f({h.slice(0, 0, 6), h.slice(0, 4, 10)})[0];
  EXPECT_EQ(f.trains({h.slice(0, 0, 6), h.slice(0, 4, 10)}), std::optional<bool>(true));
  // Everything the caller holds afterwards feeds the loss: the output and the written base.
  (out * g).sum().add((h * h).sum()).backward();
  at::Tensor got_grad = w.grad().clone(), got_h = h.detach().clone();

  w.mutable_grad() = at::Tensor();
  at::Tensor eh = w * 3;
  at::Tensor want = write_first({eh.slice(0, 0, 6), eh.slice(0, 4, 10)})[0];
  (want * g).sum().add((eh * eh).sum()).backward();
  EXPECT_TRUE(at::allclose(out, want));
  EXPECT_TRUE(at::allclose(got_h, eh.detach()));
  EXPECT_TRUE(at::allclose(got_grad, w.grad(), 1e-5, 1e-6)) << got_grad << w.grad();

  // The captured graph regenerates both views from one [10] base.
  std::shared_ptr<const Graph> captured = f.captured_graph({h.slice(0, 0, 6), h.slice(0, 4, 10)});
  ASSERT_TRUE(captured);
  ASSERT_EQ(captured->placeholders().size(), 1u);
  EXPECT_EQ(captured->placeholders()[0]->tensor_meta().annotation(), "f32[10][1]cpu");
  ASSERT_EQ(record->graphs.size(), 1u);
  const Graph& fw = *record->graphs[0];
  ASSERT_EQ(fw.placeholders().size(), 1u) << print_graph(fw);
  // The seed's ops; the forward also makes the zeros that as_strided_scatter's backward reads
  // (cheaper to save than the base to recompute them from).
  std::vector<std::string> ops = call_ops(fw);
  ops.erase(std::remove(ops.begin(), ops.end(), "aten::zeros_like"), ops.end());
  EXPECT_EQ(ops, (std::vector<std::string>{"aten::as_strided", "aten::mul.Scalar",
                                           "aten::as_strided_scatter", "aten::as_strided",
                                           "aten::as_strided", "aten::add.Tensor"}))
      << print_graph(fw);
  // Another call with the views of another base of the same layout reuses the compilation.
  at::Tensor h2 = w * 2;
  f({h2.slice(0, 0, 6), h2.slice(0, 4, 10)});
  EXPECT_EQ(f.num_compilations(), 1u);
}

// Written overlapping views beside other inputs: the base takes the views' place, the gradients
// of the other inputs and of the base are eager's, and a base of another size compiles again.
TEST(AliasedInputs, SyntheticBaseBesideOtherInputs) {
  at::Tensor w = at::randn({2, 5}).requires_grad_(), v = at::randn({6}).requires_grad_();
  AOTFunction f = aot_function(write_first_scaled);
  auto step = [&](const TensorFunction& fn, const at::Tensor& wt) {
    at::Tensor h = wt * 2;
    at::Tensor flat = h.view({10});
    at::Tensor out = fn({flat.slice(0, 1, 7), flat.slice(0, 3, 9), v})[0];
    out.pow(2).sum().add(h.sum()).backward();
    return std::make_pair(out.detach(), h.detach());
  };
  auto [got, got_h] = step([&](const std::vector<at::Tensor>& in) { return f(in); }, w);
  at::Tensor gw = w.grad().clone(), gv = v.grad().clone();
  w.mutable_grad() = at::Tensor();
  v.mutable_grad() = at::Tensor();
  auto [want, want_h] = step(write_first_scaled, w);
  EXPECT_TRUE(at::allclose(got, want));
  EXPECT_TRUE(at::allclose(got_h, want_h));
  EXPECT_TRUE(at::allclose(gw, w.grad(), 1e-5, 1e-6)) << gw << w.grad();
  EXPECT_TRUE(at::allclose(gv, v.grad(), 1e-5, 1e-6)) << gv << v.grad();
  at::Tensor h = at::randn({12}).mul(w.sum());
  f({h.slice(0, 1, 7), h.slice(0, 3, 9), v});
  EXPECT_EQ(f.num_compilations(), 2u);
}

// Tensors that share a storage without autograd knowing them as views of one base: a storage
// base when none requires grad (as inference), a clear error when one does.
TEST(AliasedInputs, WrittenOverlapWithoutACommonBase) {
  at::Tensor storage = at::randn({10}), w = at::randn({6}).requires_grad_();
  auto alias = [&](int64_t offset) {
    return at::empty({0}).set_(storage.storage(), offset, {6}, {1});
  };
  AOTFunction f = aot_function(write_first_scaled);
  at::Tensor want_storage = storage.clone();
  at::Tensor want =
      write_first_scaled({want_storage.slice(0, 0, 6), want_storage.slice(0, 4, 10), w})[0];
  at::Tensor got = f({alias(0), alias(4), w})[0];
  EXPECT_TRUE(at::allclose(got, want));
  EXPECT_TRUE(at::allclose(storage, want_storage));
  got.sum().backward();
  EXPECT_TRUE(at::allclose(w.grad(), want_storage.slice(0, 0, 6) + want_storage.slice(0, 4, 10)));

  at::Tensor x = alias(0), y = alias(4).requires_grad_();
  std::string m = error_of([&] { f({x, y, w}); });
  EXPECT_NE(m.find("arguments 0 and 1 share a storage and overlap, the function writes one of "
                   "them and they require grad, but autograd does not know them as views of one "
                   "base"),
            std::string::npos)
      << m;
}

// Written views of a leaf that requires grad are an error, as eagerly (libtorch's message).
TEST(AliasedInputs, WrittenViewsOfALeafThatRequiresGradAreAnError) {
  at::Tensor p = at::randn({10}).requires_grad_();
  AOTFunction f = aot_function(write_first);
  std::string m = error_of([&] { f({p.slice(0, 0, 6), p.slice(0, 4, 10)}); });
  EXPECT_NE(m.find("leaf Variable that requires grad"), std::string::npos) << m;
  // Under no_grad the inference path gives them a synthetic base, as eager computes.
  at::Tensor base = p.detach().clone(), want_base = base.clone();
  at::Tensor want = write_first({want_base.slice(0, 0, 6), want_base.slice(0, 4, 10)})[0];
  c10::NoGradGuard no_grad;
  at::Tensor got = f({base.slice(0, 0, 6), base.slice(0, 4, 10)})[0];
  EXPECT_TRUE(at::equal(got, want));
  EXPECT_TRUE(at::equal(base, want_base));
}

TEST(AliasedInputs, ExportRaisesOnOverlappingViewsTheGraphWrites) {
  at::Tensor base = at::randn({10});
  std::string m = error_of([&] {
    aot_export(write_first, {base.slice(0, 0, 6), base.slice(0, 4, 10)}, false);
  });
  EXPECT_NE(m.find("aot_export: encountered aliased inputs that are mutated in the graph you "
                   "are trying to export: inputs arg0_1 and arg1_1"),
            std::string::npos)
      << m;
  // Views of one storage that do not overlap (f(base[:5], base[5:])) export as two inputs.
  ExportedGraphs g = aot_export(write_first, {base.slice(0, 0, 5), base.slice(0, 5, 10)}, false);
  EXPECT_EQ(g.forward->placeholders().size(), 2u);
  EXPECT_EQ(g.inputs_to_mutate, (std::vector<std::string>{"arg0_1"}));
  // Overlapping views that the graph only reads export too.
  EXPECT_NO_THROW(aot_export(product_sum, {base.slice(0, 0, 6), base.slice(0, 4, 10)}, false));
}

// An argument made by as_strided of a view, reaching past the view's elements, and written in
// place (the training fuzzer's seed 32540): eagerly the write's backward reaches the old value
// through the base, so the elements outside the view get gradient. aotgrad compiles the
// argument's autograd base in its place (strided_past_its_view), where PyTorch 2.11's AOTAutograd
// sends the gradient through the as_strided's own backward and drops them. An as_strided within
// its view needs no base.
TEST(AliasedInputs, AsStridedPastItsViewWrittenTrainsThroughItsBase) {
  auto negate = [](const std::vector<at::Tensor>& in) {
    at::Tensor a = in[0];
    a.mul_(-1);
    return std::vector<at::Tensor>{a * 1};
  };
  auto leaf_grad = [](const TensorFunction& fn, bool past) {
    at::Tensor leaf = at::arange(27, at::kDouble).reshape({3, 3, 3}).requires_grad_();
    at::Tensor diagonal = (leaf * 2).diagonal(-1, 0, 1);
    at::Tensor arg = past ? diagonal.as_strided({3}, {3}, 2) : diagonal.as_strided({2}, {12}, 9);
    fn({arg})[0].backward(past ? at::tensor({1.0, 2.0, 3.0}, at::kDouble)
                               : at::tensor({1.0, 2.0}, at::kDouble));
    return leaf.grad();
  };
  AOTFunction f = aot_function(negate);
  for (bool past : {true, false}) {
    at::Tensor eager = leaf_grad(negate, past), compiled = leaf_grad(f, past);
    EXPECT_TRUE(at::allclose(compiled, eager)) << "past " << past << "\n" << compiled << eager;
  }
  at::Tensor leaf = at::zeros({3, 3, 3}, at::kDouble).requires_grad_();
  at::Tensor past = (leaf * 2).diagonal(-1, 0, 1).as_strided({3}, {3}, 2);
  at::Tensor within = (leaf * 2).diagonal(-1, 0, 1).as_strided({2}, {12}, 9);
  EXPECT_EQ(f.captured_graph({past})->placeholders()[0]->meta().tensor.dim(), 3)
      << print_graph(*f.captured_graph({past}));  // the base, [3, 3, 3]
  EXPECT_EQ(f.captured_graph({within})->placeholders()[0]->meta().tensor.dim(), 1);
}

}  // namespace
}  // namespace aotgrad

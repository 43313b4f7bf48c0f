// Tests for the graph interpreter: results against eager ATen, in-place ops, memory release,
// input checks, symbolic sizes.
#include "aotgrad/runtime/interpreter.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "../error_of.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/runtime/memory.h"
#include "aotgrad/transforms/passes/reinplace.h"

namespace aotgrad {
namespace {

std::shared_ptr<Graph> parse(const std::string& text) {
  std::shared_ptr<Graph> g = parse_graph(text, aten_ops());
  verify(*g);
  return g;
}

const char* kLinearRelu = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]"):
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.relu.default(addmm)
    mul = torch.ops.aten.mul.Tensor(relu, 2)
    return (relu, mul)
)";

TEST(Interpreter, MatchesEagerAten) {
  Interpreter interp(parse(kLinearRelu));
  at::Tensor x = at::randn({4, 8}), w = at::randn({16, 8}), b = at::randn({16});
  auto out = interp.run({x, w, b});
  ASSERT_EQ(out.size(), 2u);
  at::Tensor expected = at::relu(at::addmm(b, x, w.t()));
  EXPECT_TRUE(at::equal(out[0].toTensor(), expected));
  EXPECT_TRUE(at::equal(out[1].toTensor(), expected * 2));
}

TEST(Interpreter, RunsInPlaceOpsAsWritten) {
  Interpreter interp(parse(R"(
def forward(self, p: "f32[5]", g: "f32[5]"):
    add_ = torch.ops.aten.add_.Tensor(p, g, alpha = -0.1)
    mul = torch.ops.aten.mul.Tensor(p, 2)
    sum_1 = torch.ops.aten.sum.default(mul)
    return (sum_1,)
)"));
  at::Tensor p = at::randn({5}), g = at::randn({5});
  at::Tensor expected_p = p - 0.1 * g;
  auto out = interp.run({p, g});
  EXPECT_TRUE(at::allclose(p, expected_p));  // the caller's tensor was mutated
  EXPECT_TRUE(at::allclose(out[0].toTensor(), (expected_p * 2).sum()));
}

TEST(Interpreter, ReleasesValuesAfterLastUse) {
  install_tracking_allocator();
  std::string text = "def forward(self, x: \"f32[262144]\"):\n";  // 1 MiB
  std::string prev = "x";
  for (int i = 0; i < 10; ++i) {
    std::string name = "v" + std::to_string(i);
    text += "    " + name + " = torch.ops.aten.sin.default(" + prev + ")\n";
    prev = name;
  }
  text += "    return (" + prev + ",)\n";
  Interpreter interp(parse(text));
  at::Tensor x = at::randn({262144});
  reset_peak_memory();
  int64_t base = memory_stats().current_bytes;
  auto out = interp.run({x});
  int64_t peak = memory_stats().peak_bytes - base;
  // At most two 1 MiB intermediates are alive at once (the input is the caller's).
  EXPECT_LE(peak, 2 * 1048576 + 65536);
  EXPECT_GE(peak, 1048576);
  EXPECT_TRUE(at::allclose(out[0].toTensor(),
                           x.sin().sin().sin().sin().sin().sin().sin().sin().sin().sin()));
}

// The same chain re-inplaced (the default): each sin after the first writes into its argument, so
// the run allocates one 1 MiB buffer; bit-equal to the functional run, the input untouched.
TEST(Interpreter, ReinplacesAChainIntoOneBuffer) {
  install_tracking_allocator();
  std::string text = "def forward(self, x: \"f32[262144]\"):\n";
  std::string prev = "x";
  for (int i = 0; i < 10; ++i) {
    std::string name = "v" + std::to_string(i);
    text += "    " + name + " = torch.ops.aten.sin.default(" + prev + ")\n";
    prev = name;
  }
  text += "    return (" + prev + ",)\n";
  std::shared_ptr<Graph> g = parse(text);
  Interpreter in_place(g), functional(g, InterpreterOptions{/*reinplace=*/false});
  EXPECT_EQ(in_place.num_reinplaced(), 9u);
  EXPECT_EQ(functional.num_reinplaced(), 0u);
  at::Tensor x = at::randn({262144});
  at::Tensor x0 = x.clone();
  reset_peak_memory();
  int64_t base = memory_stats().current_bytes;
  auto out = in_place.run({x});
  MemoryStats m = memory_stats();
  EXPECT_LE(m.peak_bytes - base, 1048576 + 65536);
  EXPECT_EQ(m.allocations, 1);
  reset_peak_memory();
  base = memory_stats().current_bytes;
  auto expected = functional.run({x});
  EXPECT_GE(memory_stats().peak_bytes - base, 2 * 1048576);
  EXPECT_TRUE(at::equal(out[0].toTensor(), expected[0].toTensor()));
  EXPECT_TRUE(at::equal(x, x0));
}

// Under autograd (grad mode on, an input that requires grad), exp's result is saved by autograd
// for its backward: relu must not write it, and the gradient is eager's.
TEST(Interpreter, NeverWritesAValueAutogradHolds) {
  Interpreter interp(parse(R"(
def forward(self, x: "f32[8]"):
    exp = torch.ops.aten.exp.default(x)
    relu = torch.ops.aten.relu.default(exp)
    sum_1 = torch.ops.aten.sum.default(relu)
    return (sum_1,)
)"));
  EXPECT_EQ(interp.num_reinplaced(), 1u);
  at::Tensor x = at::randn({8}).requires_grad_(true);
  auto out = interp.run({x});
  out[0].toTensor().backward();
  at::Tensor xe = x.detach().clone().requires_grad_(true);
  at::relu(at::exp(xe)).sum().backward();
  EXPECT_TRUE(at::allclose(x.grad(), xe.grad()));
}

// A backward-like chain without in-place variants: gelu_backward and threshold_backward write
// their dying gradient argument through their out= overloads; bit-equal to the functional run.
TEST(Interpreter, ReinplacesThroughOutOverloads) {
  install_tracking_allocator();
  std::shared_ptr<Graph> g = parse(R"(
def forward(self, x: "f32[65536]", t: "f32[65536]"):
    mul = torch.ops.aten.mul.Tensor(t, 2)
    gelu_backward = torch.ops.aten.gelu_backward.default(mul, x)
    threshold_backward = torch.ops.aten.threshold_backward.default(gelu_backward, x, 0)
    return (threshold_backward,)
)");
  Interpreter in_place(g), functional(g, InterpreterOptions{/*reinplace=*/false});
  EXPECT_EQ(in_place.num_reinplaced(), 2u);
  at::Tensor x = at::randn({65536}), t = at::randn({65536});
  // Besides the 0-dim tensor of mul's 2, one buffer against three.
  reset_peak_memory();
  auto out = in_place.run({x, t});
  EXPECT_EQ(memory_stats().allocations, 2);
  reset_peak_memory();
  auto expected = functional.run({x, t});
  EXPECT_EQ(memory_stats().allocations, 4);
  EXPECT_TRUE(at::equal(out[0].toTensor(), expected[0].toTensor()));
}

// The softmax backwards write their result over their dying grad_output (libtorch's CPU kernels
// reduce each row before writing it): bit-equal to the functional run and to eager's kernels, over
// the last dimension (the vectorized row kernel) and another (the strided one), one allocation
// fewer each.
TEST(Interpreter, SoftmaxBackwardsWriteOverTheirDyingGradient) {
  install_tracking_allocator();
  for (const char* op : {"_softmax_backward_data", "_log_softmax_backward_data"}) {
    for (int dim : {-1, 1}) {
      std::string text = std::string(R"(
def forward(self, y: "f32[8, 33, 70]", t: "f32[8, 33, 70]"):
    mul = torch.ops.aten.mul.Tensor(t, 2)
    back = torch.ops.aten.)") +
                         op + ".default(mul, y, " + std::to_string(dim) +
                         R"(, torch.float32)
    return (back,)
)";
      std::shared_ptr<Graph> g = parse(text);
      Interpreter in_place(g), functional(g, InterpreterOptions{/*reinplace=*/false});
      EXPECT_EQ(in_place.num_reinplaced(), 1u) << op << " " << dim;
      at::Tensor x = at::randn({8, 33, 70}), t = at::randn({8, 33, 70});
      at::Tensor y = op[1] == 's' ? at::softmax(x, dim) : at::log_softmax(x, dim);
      reset_peak_memory();
      auto out = in_place.run({y, t});
      int64_t in_place_allocations = memory_stats().allocations;
      reset_peak_memory();
      auto expected = functional.run({y, t});
      EXPECT_EQ(memory_stats().allocations, in_place_allocations + 1) << op << " " << dim;
      at::Tensor eager = op[1] == 's' ? at::_softmax_backward_data(t * 2, y, dim, at::kFloat)
                                      : at::_log_softmax_backward_data(t * 2, y, dim, at::kFloat);
      EXPECT_TRUE(at::equal(out[0].toTensor(), expected[0].toTensor())) << op << " " << dim;
      EXPECT_TRUE(at::equal(out[0].toTensor(), eager)) << op << " " << dim;
    }
  }
}

// Compilation and run agree on the plan: every declared op the plan may write through out= has
// that overload in libtorch.
TEST(Interpreter, EveryOpThePlanWritesThroughOutHasTheOverload) {
  std::vector<std::string> missing;
  size_t checked = 0;
  for (const OpDef* op : aten_ops().all()) {
    if (!may_write_out(*op) && !may_write_out_over_first(*op)) continue;
    const AtenOp* a = nullptr;
    try {
      a = &aten_op(*op);
    } catch (const Error&) {
      continue;  // libtorch 1.13 lacks the op itself: it never runs
    }
    ++checked;
    if (!a->has_out_variant()) missing.push_back(op->name);
  }
  EXPECT_GT(checked, 50u);
  EXPECT_EQ(missing, std::vector<std::string>{});
}

TEST(Interpreter, ChecksInputsAndNamesThePlaceholder) {
  Interpreter interp(parse(kLinearRelu));
  at::Tensor x = at::randn({4, 8}), w = at::randn({16, 8}), b = at::randn({16});
  EXPECT_NE(error_of([&] {
              interp.run({x, w});
            }).find("expected 3 inputs, got 2"),
            std::string::npos);
  std::string e = error_of([&] { interp.run({x.to(at::kDouble), w, b}); });
  EXPECT_NE(e.find("input 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("dtype"), std::string::npos) << e;
  e = error_of([&] { interp.run({x, at::randn({16, 9}), b}); });
  EXPECT_NE(e.find("input 'w'"), std::string::npos) << e;
  EXPECT_NE(e.find("f32[16, 9]"), std::string::npos) << e;
  e = error_of([&] { interp.run({x, w, at::randn({16, 1})}); });
  EXPECT_NE(e.find("input 'b'"), std::string::npos) << e;
  e = error_of([&] { interp.run({x, w, c10::IValue(3)}); });
  EXPECT_NE(e.find("not a tensor"), std::string::npos) << e;
}

TEST(Interpreter, SymbolicSizesBindConsistently) {
  Interpreter interp(parse(R"(
def forward(self, x: "f32[s0, 3]", y: "f32[s0, 3]"):
    add = torch.ops.aten.add.Tensor(x, y)
    return (add,)
)"));
  for (int64_t n : {1, 5, 9}) {
    at::Tensor x = at::randn({n, 3}), y = at::randn({n, 3});
    EXPECT_TRUE(at::equal(interp.run({x, y})[0].toTensor(), x + y));
  }
  std::string e = error_of([&] { interp.run({at::randn({2, 3}), at::randn({4, 3})}); });
  EXPECT_NE(e.find("input 'y'"), std::string::npos) << e;
  EXPECT_NE(e.find("s0"), std::string::npos) << e;
}

// The message names the symbol and both inputs: the one that bound it and the one that disagrees.
TEST(Interpreter, ContradictingSizesNameBothInputsAndTheSymbol) {
  Interpreter interp(parse(R"(
def forward(self, x: "f32[s0, s1]", y: "f32[s1]", z: "f32[2*s0]"):
    add = torch.ops.aten.add.Tensor(x, y)
    return (add, z)
)"));
  interp.run({at::randn({3, 4}), at::randn({4}), at::randn({6})});
  std::string e = error_of([&] {
    interp.run({at::randn({3, 4}), at::randn({5}), at::randn({6})});
  });
  EXPECT_NE(e.find("size symbol s1: input 'y' dimension 0 is 5, but s1 = 4 from input 'x' "
                   "dimension 1"),
            std::string::npos)
      << e;
  e = error_of([&] { interp.run({at::randn({3, 4}), at::randn({4}), at::randn({7})}); });
  EXPECT_NE(e.find("size symbol s0: input 'z' dimension 0 is 7, but 2*s0 = 6 with s0 = 3 from "
                   "input 'x' dimension 0"),
            std::string::npos)
      << e;
}

// A graph traced for even sizes: s0 is half of x's size (read as sym_size // 2); a size that is
// not a multiple of 2 is an error naming the input and the divisor. An input that has s0 as a
// bare size binds it first, and the multiple is checked against it.
TEST(Interpreter, SymbolBoundByAMultiple) {
  Interpreter half(parse(R"FX(
def forward(self, x: "f32[2*s0, 3]"):
    sym_size_int: "Sym(2*s0)" = torch.ops.aten.sym_size.int(x, 0)
    floordiv: "Sym(s0)" = sym_size_int // 2
    view: "f32[s0, 6]" = torch.ops.aten.view.default(x, [floordiv, 6])
    return (view,)
)FX"));
  for (int64_t n : {1, 2, 5}) {
    at::Tensor x = at::randn({2 * n, 3});
    EXPECT_TRUE(at::equal(half.run({x})[0].toTensor(), x.view({n, 6})));
  }
  std::string e = error_of([&] { half.run({at::randn({7, 3})}); });
  EXPECT_NE(e.find("input 'x' dimension 0 is 7, not 2*s0: the graph was compiled for sizes "
                   "divisible by 2"),
            std::string::npos)
      << e;
  Interpreter both(parse(R"FX(
def forward(self, x: "f32[2*s0, 3]", y: "f32[s0]"):
    sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(y, 0)
    view: "f32[s0, 6]" = torch.ops.aten.view.default(x, [sym_size_int, 6])
    unsqueeze: "f32[s0, 1]" = torch.ops.aten.unsqueeze.default(y, 1)
    add: "f32[s0, 6]" = torch.ops.aten.add.Tensor(view, unsqueeze)
    return (add,)
)FX"));
  at::Tensor x = at::randn({8, 3}), y = at::randn({4});
  EXPECT_TRUE(at::equal(both.run({x, y})[0].toTensor(), x.view({4, 6}) + y.unsqueeze(1)));
  e = error_of([&] { both.run({at::randn({7, 3}), at::randn({3})}); });
  EXPECT_NE(e.find("input 'x' dimension 0 is 7, but 2*s0 = 6 with s0 = 3 from input 'y' "
                   "dimension 0"),
            std::string::npos)
      << e;
}

// A size that reads a symbol no input has as a bare size or a multiple cannot be checked or
// computed: an error when the graph is compiled, not at the first call.
TEST(Interpreter, SymbolBoundByNoInputIsACompileTimeError) {
  std::string e = error_of([&] {
    Interpreter interp(parse(R"(
def forward(self, x: "f32[2*s0 + 1]", y: "f32[s1]"):
    neg = torch.ops.aten.neg.default(x)
    return (neg, y)
)"));
  });
  EXPECT_NE(e.find("size symbol s0 (in input 'x', 2*s0 + 1) is bound by no input: no input has a "
                   "size or SymInt value that is just s0 or a multiple of it"),
            std::string::npos)
      << e;
}

// libtorch 1.13 has no sym_size / sym_numel / sym_stride and no SymInt arithmetic: the interpreter
// evaluates them (Python's // and % round toward negative infinity) and hands ATen concrete ints.
TEST(Interpreter, EvaluatesSymIntNodes) {
  Interpreter interp(parse(R"FX(
def forward(self, n: "Sym(s2)", x: "f32[s0, s1]"):
    sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
    sym_size_int_1: "Sym(s1)" = torch.ops.aten.sym_size.int(x, -1)
    sym_stride_int: "Sym(1)" = torch.ops.aten.sym_stride.int(x, 1)
    sym_numel: "Sym(s0*s1)" = torch.ops.aten.sym_numel.default(x)
    mul: "Sym(s0*s1)" = sym_size_int * sym_size_int_1
    sub: "Sym(s0*s1 - s2)" = mul - n
    neg: "Sym(-s1)" = -sym_size_int_1
    floordiv: "Sym((-s1//3))" = neg // 3
    mod: "Sym((-s1 % 3))" = neg % 3
    add: "Sym(s0 + 1)" = 1 + sym_size_int
    view: "f32[s0*s1][1]" = torch.ops.aten.view.default(x, [sym_numel])
    new_zeros: "f32[s0*s1 - s2, s0 + 1]" = torch.ops.aten.new_zeros.default(x, [sub, add])
    return (view, new_zeros, floordiv, mod, sym_stride_int, mul)
)FX"));
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{2, 5}, {4, 3}}) {
    at::Tensor x = at::randn({rows, cols});
    std::vector<c10::IValue> out = interp.run({c10::IValue(int64_t{1}), x});
    EXPECT_TRUE(at::equal(out[0].toTensor(), x.reshape({-1})));
    EXPECT_EQ(out[1].toTensor().sizes(), (std::vector<int64_t>{rows * cols - 1, rows + 1}));
    int64_t q = -cols / 3 - ((-cols) % 3 != 0 ? 1 : 0);  // floor(-cols / 3)
    EXPECT_EQ(out[2].toInt(), q);
    EXPECT_EQ(out[3].toInt(), -cols - 3 * q);
    EXPECT_EQ(out[4].toInt(), 1);
    EXPECT_EQ(out[5].toInt(), rows * cols);
  }
  std::string e = error_of([&] {
    Interpreter bad(parse(R"FX(
def forward(self, x: "f32[s0]"):
    sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(x, 0)
    sub: "Sym(s0 - 3)" = sym_size_int - 3
    floordiv: "Sym((s0//(s0 - 3)))" = sym_size_int // sub
    return (floordiv,)
)FX"));
    bad.run({at::randn({3})});
  });
  EXPECT_NE(e.find("node 'floordiv'"), std::string::npos) << e;
  EXPECT_NE(e.find("division by zero"), std::string::npos) << e;
}

TEST(Interpreter, KernelErrorsNameTheNode) {
  // Valid metadata, but libtorch refuses at run time (an integer divisor of zero).
  Interpreter interp(parse(R"(
def forward(self, x: "i64[3]"):
    div = torch.ops.aten.div.Tensor_mode(x, 0, rounding_mode = 'floor')
    return (div,)
)"));
  std::string e = error_of([&] { interp.run({at::ones({3}, at::kLong)}); });
  EXPECT_NE(e.find("node 'div'"), std::string::npos) << e;
}

TEST(Interpreter, ReturnsNoneOutputsInPlace) {
  Interpreter interp(parse(R"(
def forward(self, x: "f32[3]"):
    neg = torch.ops.aten.neg.default(x)
    return [neg, None, x]
)"));
  at::Tensor x = at::randn({3});
  auto out = interp.run({x});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[1].isNone());
  EXPECT_TRUE(out[2].toTensor().is_same(x));
}

}  // namespace
}  // namespace aotgrad

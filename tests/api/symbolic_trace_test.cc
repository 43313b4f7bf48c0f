// Tests for the symbolic C++ trace (Note [One symbolic trace] in frontend/dynamic_capture.cc):
// one run on fakes with libtorch SymInt sizes gives the graph that traces at three sizes unify
// into; what it cannot trace falls back to the unified traces, saying why.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>

#include "aotgrad/aotgrad.h"
#include "aotgrad/frontend/capture.h"
#include "aotgrad/frontend/dynamic_capture.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/support/logging.h"
#include "models/eager_models.h"

namespace aotgrad {
namespace {

struct Case {
  TensorFunction fn;
  std::vector<at::Tensor> inputs;
  std::vector<DynamicDim> dims;
};

// The graph of one symbolic trace, which must be the unified traces' graph as it prints: the same
// ops in the same order with the same names, sizes, strides and guards.
std::string symbolic_equals_unified(const Case& c, const std::string& what) {
  DynamicCapture sym = capture_dynamic(c.fn, c.inputs, c.dims, {}, DynamicTrace::Symbolic);
  DynamicCapture uni = capture_dynamic(c.fn, c.inputs, c.dims, {}, DynamicTrace::Unified);
  EXPECT_TRUE(sym.symbolic_trace) << what;
  EXPECT_FALSE(uni.symbolic_trace) << what;
  std::string text = print_graph(*sym.graph);
  EXPECT_EQ(text, print_graph(*uni.graph)) << what;
  EXPECT_EQ(sym.guards, uni.guards) << what;
  return text;
}

// A model of tests/models as a function of its state and inputs (functional_call).
Case model_case(const std::string& name, std::vector<at::Tensor> inputs,
                std::vector<DynamicDim> dims, std::shared_ptr<models::EagerModel>* keep) {
  std::shared_ptr<models::EagerModel> m = models::make_eager_model(name);
  *keep = m;
  models::TensorMap state = m->parameters();
  for (const auto& [k, v] : m->buffers()) state[k] = v;
  std::vector<at::Tensor> tensors;
  for (const std::string& n : m->parameter_names()) tensors.push_back(state[n]);
  for (const std::string& n : m->buffer_names()) tensors.push_back(state[n]);
  for (DynamicDim& d : dims) d.input += tensors.size();
  Case c;
  c.dims = std::move(dims);
  models::EagerModel* raw = m.get();
  c.fn = functional_call(tensors, [raw](const std::vector<at::Tensor>& in) {
    return std::vector<at::Tensor>{raw->loss(in)};
  });
  c.inputs = tensors;
  c.inputs.insert(c.inputs.end(), inputs.begin(), inputs.end());
  return c;
}

TEST(SymbolicTrace, MlpIsOneTraceAndTheUnifiedGraph) {
  at::Tensor w = at::randn({8, 4}).requires_grad_(), x = at::randn({6, 8});
  Case c{[](const std::vector<at::Tensor>& a) {
           return std::vector<at::Tensor>{at::relu(at::matmul(a[1], a[0])).sum()};
         },
         {w, x},
         {{1, 0}}};
  std::string text = symbolic_equals_unified(c, "mlp");
  EXPECT_NE(text.find("arg1_1: \"f32[s0, 8][8, 1]cpu\""), std::string::npos) << text;
}

// Sizes computed from sizes (a view of sym_size(0) * 2 rows), reshape decisions and a softmax:
// the expressions are nodes of the graph, as make_fx's symbolic mode writes them.
TEST(SymbolicTrace, SizeArithmeticBecomesSymNodes) {
  at::Tensor x = at::randn({6, 4, 8});
  Case c{[](const std::vector<at::Tensor>& a) {
           const at::Tensor& t = a[0];
           at::Tensor y = t.view_symint({t.sym_size(0) * 4, 8});
           at::Tensor z = at::softmax(y.reshape({-1, 2, 4}), -1);
           return std::vector<at::Tensor>{z.transpose(0, 1).contiguous().sum(0)};
         },
         {x},
         {{0, 0}}};
  std::string text = symbolic_equals_unified(c, "views");
  EXPECT_NE(text.find("sym_size_int: \"Sym(s0)\" = torch.ops.aten.sym_size.int(arg0_1, 0)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("4*s0"), std::string::npos) << text;
}

TEST(SymbolicTrace, GptBlockIsOneTraceAndTheUnifiedGraph) {
  at::manual_seed(0);
  std::shared_ptr<models::EagerModel> keep;
  Case c =
      model_case("gpt_block_dyn",
                 {at::randint(0, 64, {3, 16}, at::kLong), at::randint(0, 64, {3, 16}, at::kLong)},
                 {{0, 0}, {0, 1}, {1, 0}, {1, 1}}, &keep);
  std::string text = symbolic_equals_unified(c, "gpt_block_dyn");
  // Named as PyTorch 2.11's symbolic make_fx names them (tests/data/models/gpt_block_dyn.fx):
  // the size product after the attention's scaling `mul`, which the trace recorded first.
  EXPECT_NE(text.find("mul_1: \"Sym(s0*s1)\" = sym_size_int_1 * sym_size_int"), std::string::npos)
      << text;
}

// A CNN written with ATen's functions (what the C++ frontend's modules call, less their size
// reads): convolution, batch norm in training mode, pooling, a linear head and cross-entropy.
TEST(SymbolicTrace, FunctionalCnnIsOneTraceAndTheUnifiedGraph) {
  at::manual_seed(0);
  std::vector<at::Tensor> p = {at::randn({8, 3, 3, 3}).requires_grad_(),
                               at::randn({8}).requires_grad_(),
                               at::ones({8}).requires_grad_(),
                               at::zeros({8}).requires_grad_(),
                               at::zeros({8}),
                               at::ones({8}),
                               at::randn({10, 8}).requires_grad_(),
                               at::randn({10}).requires_grad_()};
  Case c{[](const std::vector<at::Tensor>& a) {
           at::Tensor x = at::conv2d(a[8], a[0], a[1], 1, 1);
           x = at::batch_norm(x, a[2], a[3], a[4], a[5], true, 0.1, 1e-5, false);
           x = at::max_pool2d(at::relu(x), {2, 2});
           x = at::flatten(at::adaptive_avg_pool2d(x, {1, 1}), 1);
           return std::vector<at::Tensor>{at::cross_entropy_loss(at::linear(x, a[6], a[7]), a[9])};
         },
         p,
         {{8, 0}, {8, 2}, {8, 3}, {9, 0}}};
  c.inputs.push_back(at::randn({5, 3, 12, 14}));
  c.inputs.push_back(at::randint(0, 10, {5}, at::kLong));
  std::string text = symbolic_equals_unified(c, "functional cnn");
  EXPECT_NE(text.find("arg8_1: \"f32[s0, 3, s1, s2]"), std::string::npos) << text;
}

// libtorch's C++ frontend reads sizes as integers in places (AdaptiveAvgPool2d's forward takes
// `input.sizes()` for its default output size): such a model falls back to the unified traces,
// which give its graph.
TEST(SymbolicTrace, CnnOfFrontendModulesFallsBackToUnifiedTraces) {
  at::manual_seed(0);
  std::shared_ptr<models::EagerModel> keep;
  Case c = model_case("cnn_bn", {at::randn({5, 3, 16, 16}), at::randint(0, 10, {5}, at::kLong)},
                      {{0, 0}, {1, 0}}, &keep);
  DynamicCapture d = capture_dynamic(c.fn, c.inputs, c.dims);
  EXPECT_FALSE(d.symbolic_trace);
  EXPECT_NE(d.unified_because.find("as integers (sizes())"), std::string::npos)
      << d.unified_because;
  EXPECT_NE(print_graph(*d.graph).find("f32[s0, 3, 16, 16]"), std::string::npos);
}

// A concrete size read (`size(0)`) cannot be symbolic: Auto says why and unifies traces, whose
// graph fits the read as an expression; Symbolic alone is an error naming the cause.
TEST(SymbolicTrace, AConcreteSizeReadFallsBackToUnifiedTraces) {
  at::Tensor x = at::randn({6, 8});
  TensorFunction fn = [](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{a[0].view({a[0].size(0) * 2, 4}) * 3};
  };
  DynamicCapture c = capture_dynamic(fn, {x}, {{0, 0}});
  EXPECT_FALSE(c.symbolic_trace);
  EXPECT_NE(c.unified_because.find("symbolic sizes"), std::string::npos) << c.unified_because;
  EXPECT_NE(print_graph(*c.graph).find("2*s0"), std::string::npos) << print_graph(*c.graph);
  try {
    capture_dynamic(fn, {x}, {{0, 0}}, {}, DynamicTrace::Symbolic);
    FAIL() << "a concrete size read traced symbolically";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("one symbolic trace"), std::string::npos) << e.what();
  }
}

// Control flow on a size is a guard the symbols' range does not settle: the trace takes the branch
// of the hint and records the guard, as PyTorch's ShapeEnv does; a size where it fails does not
// bind, and aot_function compiles again for it, each to eager's result.
TEST(SymbolicTrace, ControlFlowOnASizeIsAGuard) {
  TensorFunction fn = [](const std::vector<at::Tensor>& a) {
    if (a[0].sym_size(0) > 4) return std::vector<at::Tensor>{a[0].sin()};
    return std::vector<at::Tensor>{a[0].cos()};
  };
  DynamicCapture c = capture_dynamic(fn, {at::randn({6, 8})}, {{0, 0}}, {}, DynamicTrace::Symbolic);
  EXPECT_NE(std::find(c.guards.begin(), c.guards.end(), "s0 > 4"), c.guards.end());
  EXPECT_TRUE(bind_dynamic(c, {at::randn({9, 8})}));
  std::string why;
  EXPECT_FALSE(bind_dynamic(c, {at::randn({3, 8})}, &why));
  EXPECT_EQ(why, "s0 > 4 (s0 = 3)");

  AOTConfig cfg;
  cfg.dynamic_dims[0] = {0};
  AOTFunction f = aot_function(fn, cfg);
  std::ostringstream log;
  LogSettings logs;
  logs.recompiles = true;
  set_log_settings(logs);
  set_log_stream(&log);
  for (int64_t b : {6, 9, 3, 2, 7}) {
    at::Tensor x = at::randn({b, 8});
    EXPECT_TRUE(at::allclose(f({x})[0], fn({x})[0])) << "batch " << b;
  }
  set_log_stream(nullptr);
  set_log_settings(LogSettings{});
  EXPECT_EQ(f.num_compilations(), 2u);
  EXPECT_NE(log.str().find("guard failed in the dynamic compilation: s0 > 4 (s0 = 3)"),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("guards: 2 <= s0; s0 <= 4\n    traced once with symbolic sizes"),
            std::string::npos)
      << log.str();
}

// A size read as an integer (a SymInt's guard_int, a scale computed from it) fixes the size: the
// guard Eq(s0, 6) makes the graph serve one size, so the symbolic trace is not taken; and a meta
// function's check that holds by the hints (a matmul's inner size s0 against a static 5) is such a
// guard too.
TEST(SymbolicTrace, AGuardThatFixesASizeIsNoDynamicGraph) {
  TensorFunction scale = [](const std::vector<at::Tensor>& a) {
    const int64_t n = a[0].sym_size(0).guard_int(__FILE__, __LINE__);
    return std::vector<at::Tensor>{a[0] * (1.0 / static_cast<double>(n))};
  };
  TensorFunction mm = [](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{a[0].mm(a[1])};
  };
  struct {
    TensorFunction fn;
    std::vector<at::Tensor> in;
    DynamicDim dim;
    std::string guard;
  } cases[] = {{scale, {at::randn({6, 8})}, {0, 0}, "Eq(s0, 6)"},
               {mm, {at::randn({4, 5}), at::randn({5, 3})}, {0, 1}, "Eq(s0, 5)"}};
  for (const auto& c : cases) {
    try {
      capture_dynamic(c.fn, c.in, {c.dim}, {}, DynamicTrace::Symbolic);
      FAIL() << c.guard << " was not noticed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("the trace fixes a dynamic size: " + c.guard),
                std::string::npos)
          << e.what();
    }
  }
}

// A size 0 or 1 is not a symbol's value: the capture unifies traces, one of them at that size.
TEST(SymbolicTrace, ASizeOfOneUnifiesTraces) {
  at::Tensor x = at::randn({1, 8});
  TensorFunction fn = [](const std::vector<at::Tensor>& a) {
    return std::vector<at::Tensor>{a[0].sin()};
  };
  DynamicCapture c = capture_dynamic(fn, {x}, {{0, 0}});
  EXPECT_FALSE(c.symbolic_trace);
  EXPECT_NE(c.unified_because.find("0 or 1"), std::string::npos) << c.unified_because;
}

}  // namespace
}  // namespace aotgrad

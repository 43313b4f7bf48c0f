// Tests for saved-tensor hooks on compiled functions: pack at forward, unpack at backward.
#include "aotgrad/runtime/saved_tensors_hooks.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/saved_variable_hooks.h>

#include <atomic>
#include <thread>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/runtime/compiled_function.h"

namespace aotgrad {
namespace {

const char* kMlp = R"(
def forward(self, x: "f32[8, 16]", w1: "f32[32, 16]", w2: "f32[4, 32]"):
    t = torch.ops.aten.t.default(w1)
    mm = torch.ops.aten.mm.default(x, t)
    gelu = torch.ops.aten.gelu.default(mm)
    t_1 = torch.ops.aten.t.default(w2)
    mm_1 = torch.ops.aten.mm.default(gelu, t_1)
    return (mm_1,)
)";

struct Inputs {
  at::Tensor x, w1, w2;
  Inputs() {
    at::manual_seed(0);
    x = at::randn({8, 16});
    w1 = at::randn({32, 16}).requires_grad_();
    w2 = at::randn({4, 32}).requires_grad_();
  }
  std::vector<at::Tensor> args() const { return {x, w1, w2}; }
  void zero_grads() {
    for (at::Tensor* t : {&w1, &w2}) t->mutable_grad() = at::Tensor();
  }
};

// Trains one step; returns the grads of w1 and w2.
std::vector<at::Tensor> step(CompiledFunction& f, Inputs& in, const at::Tensor& go) {
  in.zero_grads();
  f(in.args())[0].backward(go);
  return {in.w1.grad().clone(), in.w2.grad().clone()};
}

std::vector<at::Tensor> eager_grads(Inputs& in, const at::Tensor& go) {
  in.zero_grads();
  at::mm(at::gelu(at::mm(in.x, in.w1.t())), in.w2.t()).backward(go);
  return {in.w1.grad().clone(), in.w2.grad().clone()};
}

size_t defined_saved(const CompiledFunction& f) { return f.artifacts().saved.size(); }

// Identity hooks that count their calls in `n`.
PackHook counting_pack(int& n) {
  return [&n](const at::Tensor& t) -> c10::IValue {
    ++n;
    return t;
  };
}
UnpackHook counting_unpack(int& n) {
  return [&n](const c10::IValue& v) {
    ++n;
    return v.toTensor();
  };
}

TEST(SavedTensorsHooks, IdentityHooksRunOncePerSavedValueAndChangeNothing) {
  CompiledFunction f(parse_graph(kMlp, aten_ops()), {false, true, true});
  Inputs in;
  at::Tensor go = at::randn({8, 4});
  std::vector<at::Tensor> plain = step(f, in, go);
  int packs = 0, unpacks = 0;
  std::vector<at::Tensor> hooked;
  {
    SavedTensorsHooks hooks(counting_pack(packs), counting_unpack(unpacks));
    in.zero_grads();
    at::Tensor out = f(in.args())[0];
    EXPECT_EQ(packs, static_cast<int>(defined_saved(f)));
    EXPECT_EQ(unpacks, 0);
    out.backward(go);
    hooked = {in.w1.grad().clone(), in.w2.grad().clone()};
  }
  EXPECT_GT(packs, 0);
  EXPECT_EQ(unpacks, packs);
  for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(at::equal(hooked[k], plain[k])) << k;
  std::vector<at::Tensor> eager = eager_grads(in, go);
  for (size_t k = 0; k < 2; ++k) EXPECT_TRUE(at::allclose(hooked[k], eager[k], 1e-5, 1e-5)) << k;
}

// Activation compression: the forward's saved float tensors are kept as bf16 and cast back when
// the backward needs them; the grads are eager's to bf16 precision, and not the uncompressed ones.
TEST(SavedTensorsHooks, CompressesSavedActivationsToBf16) {
  CompiledFunction f(parse_graph(kMlp, aten_ops()), {false, true, true});
  Inputs in;
  at::Tensor go = at::randn({8, 4});
  std::vector<at::Tensor> plain = step(f, in, go);
  int64_t saved_bytes = 0, packed_bytes = 0;
  std::vector<at::Tensor> compressed;
  {
    SavedTensorsHooks hooks(
        [&](const at::Tensor& t) -> c10::IValue {
          saved_bytes += t.nbytes();
          at::Tensor low = t.to(at::kBFloat16);
          packed_bytes += low.nbytes();
          return c10::ivalue::Tuple::create({low, static_cast<int64_t>(t.scalar_type())});
        },
        [](const c10::IValue& v) {
          auto elems = v.toTupleRef().elements();
          return elems[0].toTensor().to(static_cast<c10::ScalarType>(elems[1].toInt()));
        });
    compressed = step(f, in, go);
  }
  EXPECT_GT(saved_bytes, 0);
  EXPECT_EQ(packed_bytes * 2, saved_bytes);
  std::vector<at::Tensor> eager = eager_grads(in, go);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_FALSE(at::equal(compressed[k], plain[k])) << k;
    EXPECT_TRUE(at::allclose(compressed[k], eager[k], 3e-2, 3e-2)) << k;
  }
}

TEST(SavedTensorsHooks, InnermostGuardAppliesAndPackedValuesOutliveTheirGuard) {
  CompiledFunction f(parse_graph(kMlp, aten_ops()), {false, true, true});
  Inputs in;
  int outer = 0, unpacked_outer = 0, inner = 0, unpacked_inner = 0;
  at::Tensor out;
  {
    SavedTensorsHooks a(counting_pack(outer), counting_unpack(unpacked_outer));
    {
      SavedTensorsHooks b(counting_pack(inner), counting_unpack(unpacked_inner));
      out = f(in.args())[0];
    }
  }
  EXPECT_EQ(outer, 0);
  EXPECT_EQ(inner, static_cast<int>(defined_saved(f)));
  // The backward runs after both guards are gone, on another thread: the forward's hooks unpack.
  std::thread([&] { out.sum().backward(); }).join();
  EXPECT_EQ(unpacked_inner, inner);
  // No guard: nothing is packed.
  inner = 0;
  f(in.args())[0].sum().backward();
  EXPECT_EQ(inner, 0);
}

TEST(SavedTensorsHooks, RetainGraphUnpacksOnEveryBackward) {
  CompiledFunction f(parse_graph(kMlp, aten_ops()), {false, true, true});
  Inputs in;
  int unpacks = 0;
  at::Tensor out;
  {
    SavedTensorsHooks hooks([](const at::Tensor& t) -> c10::IValue { return t.clone(); },
                            counting_unpack(unpacks));
    out = f(in.args())[0].sum();
  }
  out.backward({}, /*retain_graph=*/true);
  out.backward();
  EXPECT_EQ(unpacks, 2 * static_cast<int>(defined_saved(f)));
  try {
    out.backward();
    FAIL() << "a third backward without retain_graph ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("a second time"), std::string::npos) << e.what();
  }
}

TEST(SavedTensorsHooks, UnpackOfTheWrongDtypeIsAnErrorNamingTheValue) {
  CompiledFunction f(parse_graph(kMlp, aten_ops()), {false, true, true});
  Inputs in;
  at::Tensor out;
  {
    SavedTensorsHooks hooks([](const at::Tensor& t) -> c10::IValue { return t.to(at::kBFloat16); },
                            [](const c10::IValue& v) { return v.toTensor(); });  // not cast back
    out = f(in.args())[0].sum();
  }
  try {
    out.backward();
    FAIL() << "the backward ran on bf16 saved values";
  } catch (const std::exception& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("the unpack hook of saved value 0 ('" + f.artifacts().saved[0] + "')"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("BFloat16"), std::string::npos) << m;
  }
  EXPECT_THROW(SavedTensorsHooks(nullptr, [](const c10::IValue& v) { return v.toTensor(); }),
               Error);
}

// libtorch's own default hooks (what a Python process's saved_tensors_hooks sets, through its
// engine) apply to compiled functions as they do to eager nodes. A C++ engine with default hooks
// stands in for Python's.
std::atomic<int> g_engine_packs{0};
std::atomic<bool> g_engine_hooks_on{false};

struct CountingHooks : torch::autograd::SavedVariableHooks {
  at::Tensor kept;
  void call_pack_hook(const at::Tensor& t) override {
    ++g_engine_packs;
    kept = t.to(at::kBFloat16);
    dtype = t.scalar_type();
  }
  at::Tensor call_unpack_hook() override { return kept.to(dtype); }
  c10::ScalarType dtype = at::kFloat;
};

struct EngineWithDefaultHooks : torch::autograd::Engine {
  std::unique_ptr<torch::autograd::SavedVariableHooks> get_default_saved_variable_hooks() override {
    if (!g_engine_hooks_on) return nullptr;
    return std::make_unique<CountingHooks>();
  }
  static torch::autograd::Engine& get() {
    static auto* engine =
        new EngineWithDefaultHooks();  // never destroyed: its threads outlive main
    return *engine;
  }
};

TEST(SavedTensorsHooks, EngineDefaultHooksApplyToCompiledAndEagerAlike) {
  CompiledFunction f(parse_graph(kMlp, aten_ops()), {false, true, true});
  Inputs in;
  at::Tensor go = at::randn({8, 4});
  std::vector<at::Tensor> eager_plain = eager_grads(in, go);
  torch::autograd::set_default_engine_stub(&EngineWithDefaultHooks::get);
  struct Restore {
    ~Restore() {
      g_engine_hooks_on = false;
      torch::autograd::set_default_engine_stub(&torch::autograd::Engine::get_base_engine);
    }
  } restore;
  g_engine_hooks_on = true;
  std::vector<at::Tensor> compiled = step(f, in, go);
  EXPECT_EQ(g_engine_packs.load(), static_cast<int>(defined_saved(f)));
  g_engine_packs = 0;
  std::vector<at::Tensor> eager = eager_grads(in, go);
  EXPECT_GT(g_engine_packs.load(), 0);  // eager libtorch's nodes packed theirs too
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_FALSE(at::equal(compiled[k], eager_plain[k])) << k;
    EXPECT_TRUE(at::allclose(compiled[k], eager[k], 3e-2, 3e-2)) << k;
  }
}

}  // namespace
}  // namespace aotgrad

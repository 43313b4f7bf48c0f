// Tests for aot_function over nested inputs and outputs (§13.22): dicts, lists, tuples, None and
// constants around the tensors train as eagerly, each structure compiles once, and bad structures
// are clear errors.
#include "aotgrad/nested.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace aotgrad {
namespace {

c10::IValue dict_of(std::vector<std::pair<std::string, c10::IValue>> items) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  for (auto& [k, v] : items) d.insert(k, v);
  return d;
}

// {"x": x, "w": [w1, w2]}, (b, None), scale, activation -> {"out": h, "aux": (h.sum(), None)}
c10::IValue layers(const std::vector<c10::IValue>& a) {
  c10::impl::GenericDict in = a[0].toGenericDict();
  at::Tensor x = in.at("x").toTensor();
  std::vector<at::Tensor> w = in.at("w").toTensorVector();
  const auto& bias = a[1].toTupleRef().elements();
  at::Tensor h = at::mm(x, w[0]);
  h = a[3].toStringRef() == "relu" ? at::relu(h) : at::tanh(h);
  h = at::mm(h, w[1]) * a[2].toDouble() + bias[0].toTensor();
  return dict_of({{"out", h}, {"aux", c10::ivalue::Tuple::create({h.sum(), c10::IValue()})}});
}

struct Inputs {
  at::Tensor x = at::randn({4, 8}), w1 = at::randn({8, 6}).requires_grad_(),
             w2 = at::randn({6, 3}).requires_grad_(), b = at::randn({3}).requires_grad_();
  std::vector<c10::IValue> args(double scale, const std::string& act) const {
    return {dict_of({{"x", x}, {"w", c10::List<at::Tensor>({w1, w2})}}),
            c10::ivalue::Tuple::create({b, c10::IValue()}), scale, act};
  }
  std::vector<at::Tensor> take_grads() {
    std::vector<at::Tensor> g;
    for (at::Tensor* t : {&w1, &w2, &b}) {
      g.push_back(t->grad().clone());
      t->mutable_grad() = at::Tensor();
    }
    return g;
  }
};

TEST(NestedFunction, NestedInputsAndOutputsTrainAsEagerly) {
  at::manual_seed(0);
  Inputs in;
  AOTNestedFunction f = aot_function(layers);
  c10::IValue got = f(in.args(0.5, "relu"));
  c10::impl::GenericDict out = got.toGenericDict();
  ASSERT_EQ(out.size(), 2u);
  const auto& aux = out.at("aux").toTupleRef().elements();
  ASSERT_EQ(aux.size(), 2u);
  EXPECT_TRUE(aux[1].isNone());
  aux[0].toTensor().backward();
  std::vector<at::Tensor> compiled = in.take_grads();
  c10::IValue want = layers(in.args(0.5, "relu"));
  EXPECT_TRUE(at::allclose(out.at("out").toTensor(), want.toGenericDict().at("out").toTensor()));
  want.toGenericDict().at("aux").toTupleRef().elements()[0].toTensor().backward();
  std::vector<at::Tensor> eager = in.take_grads();
  for (size_t k = 0; k < eager.size(); ++k)
    EXPECT_TRUE(at::allclose(compiled[k], eager[k], 1e-5, 1e-5)) << k;
  EXPECT_EQ(f.num_compilations(), 1u);
  const AOTFunction* flat = f.flat_function(in.args(0.5, "relu"));
  ASSERT_NE(flat, nullptr);
  EXPECT_EQ(flat->trains({in.x, in.w1, in.w2, in.b}), std::optional<bool>(true));
}

TEST(NestedFunction, EachStructureAndConstantCompilesOnce) {
  Inputs in;
  AOTNestedFunction f = aot_function(layers);
  f(in.args(0.5, "relu"));
  f(in.args(0.5, "relu"));
  EXPECT_EQ(f.num_compilations(), 1u);
  c10::IValue tanh_out = f(in.args(0.5, "tanh"));  // a constant is part of the structure
  EXPECT_EQ(f.num_structures(), 2u);
  c10::IValue want = layers(in.args(0.5, "tanh"));
  EXPECT_TRUE(at::allclose(tanh_out.toGenericDict().at("out").toTensor(),
                           want.toGenericDict().at("out").toTensor()));
  f(in.args(2.0, "tanh"));
  EXPECT_EQ(f.num_structures(), 3u);
  EXPECT_EQ(f.num_compilations(), 3u);
}

TEST(NestedFunction, BadStructuresAreClearErrors) {
  Inputs in;
  int calls = 0;
  AOTNestedFunction changing = aot_function([&calls](const std::vector<c10::IValue>& a) {
    at::Tensor y = a[0].toTensor() * 2;
    return ++calls == 1 ? c10::IValue(y) : c10::IValue(c10::ivalue::Tuple::create({y}));
  });
  changing({in.x});
  try {
    changing({at::randn({5})});  // another signature: captured again, returns another structure
    FAIL() << "ran";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("the function returned (T,) where it returned T before"),
              std::string::npos)
        << e.what();
  }
  AOTNestedFunction f = aot_function(layers);
  c10::impl::GenericDict bad(c10::IntType::get(), c10::AnyType::get());
  bad.insert(int64_t{0}, in.x);
  EXPECT_THROW(f({bad}), Error);
}

}  // namespace
}  // namespace aotgrad

// Tests for nested values as tensor leaves and a structure (PyTorch's pytree).
#include "aotgrad/frontend/pytree.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

c10::IValue sample(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  c10::impl::GenericDict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("w", c10::List<at::Tensor>({b, c}));
  d.insert("scale", 0.5);
  return c10::ivalue::Tuple::create({a, d, c10::IValue(), at::Tensor(), int64_t{3},
                                     std::string("gelu"), c10::List<int64_t>({1, 2}),
                                     c10::ivalue::Tuple::create({a})});
}

TEST(Pytree, FlattenGivesTheTensorsDepthFirstAndAStructureThatPrints) {
  at::Tensor a = at::randn({2}), b = at::randn({3}), c = at::randn({4});
  TreeSpec spec;
  std::vector<at::Tensor> leaves = tree_flatten(sample(a, b, c), &spec);
  ASSERT_EQ(leaves.size(), 4u);
  EXPECT_TRUE(leaves[0].is_same(a));
  EXPECT_TRUE(leaves[1].is_same(b));
  EXPECT_TRUE(leaves[2].is_same(c));
  EXPECT_TRUE(leaves[3].is_same(a));
  EXPECT_EQ(spec.num_leaves(), 4u);
  EXPECT_EQ(spec.str(), "(T, {'w': [T, T], 'scale': 0.5}, None, None, 3, 'gelu', [1, 2], (T,))");
}

TEST(Pytree, UnflattenRebuildsTheValueAroundNewTensors) {
  at::Tensor a = at::randn({2}), b = at::randn({3}), c = at::randn({4});
  TreeSpec spec;
  tree_flatten(sample(a, b, c), &spec);
  std::vector<at::Tensor> other = {at::zeros({2}), at::ones({3}), at::ones({4}), at::zeros({2})};
  c10::IValue v = tree_unflatten(other, spec);
  TreeSpec again;
  std::vector<at::Tensor> leaves = tree_flatten(v, &again);
  EXPECT_EQ(again, spec);
  for (size_t i = 0; i < other.size(); ++i) EXPECT_TRUE(leaves[i].is_same(other[i])) << i;
  const auto& elems = v.toTupleRef().elements();
  EXPECT_TRUE(elems[1].toGenericDict().at("w").isTensorList());
  EXPECT_EQ(elems[4].toInt(), 3);
  EXPECT_EQ(elems[5].toStringRef(), "gelu");
  EXPECT_THROW(tree_unflatten({a}, spec), Error);
}

TEST(Pytree, UnsupportedValuesAreErrorsNamingThePlace) {
  c10::impl::GenericDict d(c10::IntType::get(), c10::AnyType::get());
  d.insert(int64_t{1}, at::randn({2}));
  try {
    tree_flatten(c10::ivalue::Tuple::create({at::randn({1}), d}), nullptr);
    FAIL() << "flattened";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("the value[1] is a dict with a key of type Int"), std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace aotgrad

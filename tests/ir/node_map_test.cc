// aotgrad: tests of NodeMap against std::unordered_map on the nodes of a graph.
#include "aotgrad/ir/node_map.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "aotgrad/ir/graph.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

TEST(NodeMap, AgreesWithUnorderedMapThroughRehashes) {
  Graph g;
  const OpDef& relu = aten_ops().get("aten::relu");
  Node* x = g.add_placeholder("x", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {2})));
  std::vector<Node*> nodes{x};
  for (int i = 0; i < 5000; ++i) nodes.push_back(g.add_call(relu, {nodes.back()}));

  std::mt19937 rng(3);
  NodeMap<int> map;
  std::unordered_map<const Node*, int> ref;
  for (int step = 0; step < 20000; ++step) {
    const Node* n = nodes[rng() % nodes.size()];
    int v = static_cast<int>(rng() % 1000);
    auto [value, inserted] = map.emplace(n, v);
    auto [it, ref_inserted] = ref.emplace(n, v);
    ASSERT_EQ(inserted, ref_inserted);
    ASSERT_EQ(*value, it->second);  // emplace keeps the first value
    if (step % 7 == 0) {
      map[n] += 1;
      ref[n] += 1;
    }
    ASSERT_EQ(map.size(), ref.size());
  }
  for (const Node* n : nodes) {
    auto it = ref.find(n);
    ASSERT_EQ(map.contains(n), it != ref.end());
    if (it != ref.end()) EXPECT_EQ(map.at(n), it->second);
  }
}

TEST(NodeMap, MissingNodesAreErrors) {
  Graph g;
  Node* x = g.add_placeholder("x", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {2})));
  Node* y = g.add_placeholder("y", ValueMeta::of(make_tensor_meta(ScalarType::Float32, {2})));
  NodeMap<size_t> map(1);
  EXPECT_EQ(map.find(x), nullptr);
  EXPECT_EQ(map[x], 0u);  // operator[] inserts a default value
  EXPECT_TRUE(map.contains(x));
  EXPECT_FALSE(map.contains(y));
  try {
    map.at(y, "positions");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "positions: node is not in the map");
  }
  EXPECT_THROW(map.emplace(nullptr, 1), Error);
}

}  // namespace
}  // namespace aotgrad

// Tests for split_weight_gradients: a backward graph in, the same graph with each
// convolution_backward's weight gradient a call of its own out.
#include "aotgrad/transforms/partition/split_weight_grads.h"

#include <gtest/gtest.h>

#include "../graph_text.h"

namespace aotgrad {
namespace {

// Three convolution backwards: one for grad_input and grad_weight, one with a bias gradient too,
// one (the first layer's) for grad_weight alone.
const char* kBackward = R"(
def forward(self, x: "f32[2, 3, 8, 8]", w1: "f32[4, 3, 3, 3]", relu: "f32[2, 4, 8, 8]", w2: "f32[4, 4, 3, 3]", relu_1: "f32[2, 4, 8, 8]", w3: "f32[5, 4, 1, 1]", tangents_1: "f32[2, 5, 8, 8]"):
    convolution_backward = torch.ops.aten.convolution_backward.default(tangents_1, relu_1, w3, [5], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True])
    getitem = convolution_backward[0]
    getitem_1 = convolution_backward[1]
    getitem_2 = convolution_backward[2]
    threshold_backward = torch.ops.aten.threshold_backward.default(getitem, relu_1, 0)
    convolution_backward_1 = torch.ops.aten.convolution_backward.default(threshold_backward, relu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])
    getitem_3 = convolution_backward_1[0]
    getitem_4 = convolution_backward_1[1]
    threshold_backward_1 = torch.ops.aten.threshold_backward.default(getitem_3, relu, 0)
    convolution_backward_2 = torch.ops.aten.convolution_backward.default(threshold_backward_1, x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [False, True, False])
    getitem_5 = convolution_backward_2[1]
    return [getitem_5, getitem_4, getitem_1, getitem_2]
)";

TEST(SplitWeightGradients, EachWeightGradientBecomesACallOfItsOwn) {
  std::shared_ptr<Graph> g = parse_text(kBackward);
  EXPECT_EQ(split_weight_gradients(*g), 2);
  verify(*g);
  EXPECT_EQ(graph_text(*g),
            "def forward(self, x, w1, relu, w2, relu_1, w3, tangents_1):\n"
            "convolution_backward = torch.ops.aten.convolution_backward.default(tangents_1, "
            "relu_1, w3, [5], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, False, False])\n"
            "convolution_backward_3 = torch.ops.aten.convolution_backward.default(tangents_1, "
            "relu_1, w3, [5], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [False, True, True])\n"
            "getitem = convolution_backward[0]\n"
            "getitem_1 = convolution_backward_3[1]\n"
            "getitem_2 = convolution_backward_3[2]\n"
            "threshold_backward = torch.ops.aten.threshold_backward.default(getitem, relu_1, 0)\n"
            "convolution_backward_1 = torch.ops.aten.convolution_backward.default("
            "threshold_backward, relu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, "
            "[True, False, False])\n"
            "convolution_backward_4 = torch.ops.aten.convolution_backward.default("
            "threshold_backward, relu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, "
            "[False, True, False])\n"
            "getitem_3 = convolution_backward_1[0]\n"
            "getitem_4 = convolution_backward_4[1]\n"
            "threshold_backward_1 = torch.ops.aten.threshold_backward.default(getitem_3, relu, "
            "0)\n"
            "convolution_backward_2 = torch.ops.aten.convolution_backward.default("
            "threshold_backward_1, x, w1, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, "
            "[False, True, False])\n"
            "getitem_5 = convolution_backward_2[1]\n"
            "return [getitem_5, getitem_4, getitem_1, getitem_2]\n");
  // Each half's metadata has only its own results.
  const Node* input_half = g->find("convolution_backward");
  const Node* weight_half = g->find("convolution_backward_3");
  EXPECT_TRUE(input_half->meta().elems[0].is_tensor());
  EXPECT_FALSE(input_half->meta().elems[1].is_tensor());
  EXPECT_FALSE(weight_half->meta().elems[0].is_tensor());
  EXPECT_TRUE(weight_half->meta().elems[1].is_tensor());
  EXPECT_TRUE(weight_half->meta().elems[2].is_tensor());
  // The metadata is what the op's meta function gives for each mask.
  for (const Node* n : {input_half, weight_half}) {
    ValueMeta inferred = infer_meta(*n->op(), n->args());
    ASSERT_EQ(inferred.elems.size(), 3u);
    for (size_t k = 0; k < 3; ++k)
      EXPECT_EQ(inferred.elems[k].is_tensor(), n->meta().elems[k].is_tensor()) << n->name() << k;
  }
  // Split again: nothing is left to split.
  EXPECT_EQ(split_weight_gradients(*g), 0);
}

// A call no getitem reads one half of stays as it is (dead code elimination's business).
TEST(SplitWeightGradients, ACallWithAnUnreadHalfIsNotSplit) {
  std::shared_ptr<Graph> g = parse_text(R"(
def forward(self, relu: "f32[2, 4, 8, 8]", w2: "f32[4, 4, 3, 3]", tangents_1: "f32[2, 4, 8, 8]"):
    convolution_backward = torch.ops.aten.convolution_backward.default(tangents_1, relu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])
    getitem = convolution_backward[0]
    return [getitem]
)");
  std::string before = graph_text(*g);
  EXPECT_EQ(split_weight_gradients(*g), 0);
  EXPECT_EQ(graph_text(*g), before);
  // Nor one whose grad_input nothing reads.
  std::shared_ptr<Graph> h = parse_text(R"(
def forward(self, relu: "f32[2, 4, 8, 8]", w2: "f32[4, 4, 3, 3]", tangents_1: "f32[2, 4, 8, 8]"):
    convolution_backward = torch.ops.aten.convolution_backward.default(tangents_1, relu, w2, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])
    getitem_1 = convolution_backward[1]
    return [getitem_1]
)");
  before = graph_text(*h);
  EXPECT_EQ(split_weight_gradients(*h), 0);
  EXPECT_EQ(graph_text(*h), before);
}

}  // namespace
}  // namespace aotgrad

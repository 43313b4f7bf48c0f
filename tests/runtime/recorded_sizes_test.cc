// Note [Recorded sizes]: a dynamic_output_shape op keeps the sizes its graph recorded, through
// compilation and training, and a run whose values give other sizes is an error naming them.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/dispatcher_ops.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/compiled_graph.h"

namespace aotgrad {
namespace {

// As tools/export.py prints torchaudio's Tacotron2 encoder: the rows of the packed sequence are
// the sum of `lengths`, 4 + 2.
const char* kPacked = R"(
def forward(self, x: "f32[2, 4, 3][12, 3, 1]cpu", lengths: "i64[2][1]cpu"):
    _pack_padded_sequence = torch.ops.aten._pack_padded_sequence.default(x, lengths, True)
    getitem: "f32[6, 3][3, 1]cpu" = _pack_padded_sequence[0]
    getitem_1: "i64[4][1]cpu" = _pack_padded_sequence[1];  _pack_padded_sequence = None
    mul: "f32[6, 3][3, 1]cpu" = torch.ops.aten.mul.Tensor(getitem, getitem);  getitem = None
    sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(mul);  mul = None
    return (sum_1, getitem_1)
)";

std::unique_ptr<Graph> parse(const char* text) {
  install_libtorch_ops();
  return parse_graph(text, aten_ops());
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.message();
  }
  return "(no error)";
}

TEST(RecordedSizes, PackPaddedSequenceIsDynamicOutputShapeAsInFakeTensor) {
  install_libtorch_ops();
  // native_functions.yaml does not tag it; PyTorch's FakeTensor raises
  // DynamicOutputShapeException for it without unbacked sizes.
  EXPECT_TRUE(aten_ops().get("aten::_pack_padded_sequence").has_tag(kDynamicOutputShape));
  EXPECT_FALSE(aten_ops().get("aten::_pack_padded_sequence_backward").has_tag(kDynamicOutputShape));
}

TEST(RecordedSizes, TheGraphKeepsTheSizesItRecorded) {
  auto g = parse(kPacked);
  verify(*g);
  std::string text = print_graph(*g);
  EXPECT_NE(text.find("getitem: \"f32[6, 3][3, 1]cpu\" = _pack_padded_sequence[0]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("getitem_1: \"i64[4][1]cpu\" = _pack_padded_sequence[1]"), std::string::npos)
      << text;
}

TEST(RecordedSizes, TrainsAsEagerOnTheValuesItWasTracedWith) {
  CompiledFunction f(parse(kPacked), {true, false});
  at::Tensor x = at::randn({2, 4, 3}, at::kDouble).to(at::kFloat).requires_grad_();
  at::Tensor lengths = at::tensor(std::vector<int64_t>{4, 2});
  std::vector<at::Tensor> out = f({x, lengths});
  at::Tensor xe = x.detach().clone().requires_grad_();
  auto packed = at::_pack_padded_sequence(xe, lengths, true);
  at::Tensor loss = (std::get<0>(packed) * std::get<0>(packed)).sum();
  EXPECT_TRUE(at::allclose(out[0], loss)) << out[0] << loss;
  EXPECT_TRUE(at::equal(out[1], std::get<1>(packed))) << out[1];
  at::Tensor gx = torch::autograd::grad({out[0]}, {x})[0];
  at::Tensor ge = torch::autograd::grad({loss}, {xe})[0];
  EXPECT_TRUE(at::allclose(gx, ge)) << gx << ge;
  // The padding beyond each length gets no gradient.
  EXPECT_EQ(gx[1].slice(0, 2).abs().sum().item<float>(), 0.0f);
}

TEST(RecordedSizes, OtherValuesAreAnErrorThatNamesBothSizes) {
  CompiledGraph f(parse(kPacked));
  at::Tensor x = at::randn({2, 4, 3});
  std::string msg = message_of([&] { f({x, at::tensor(std::vector<int64_t>{4, 1})}); });
  EXPECT_NE(msg.find("node '_pack_padded_sequence' (aten::_pack_padded_sequence)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("result 0 has sizes [5, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("traced with f32[6, 3]"), std::string::npos) << msg;
  // The same rows in another split: the batch sizes are the other result, [2, 2, 2] not 4 long.
  msg = message_of([&] { f({x, at::tensor(std::vector<int64_t>{3, 3})}); });
  EXPECT_NE(msg.find("result 1 has sizes [3]"), std::string::npos) << msg;
  // The values it was traced with still run.
  EXPECT_EQ(f({x, at::tensor(std::vector<int64_t>{4, 2})}).size(), 2u);
}

TEST(RecordedSizes, AResultWithNoAnnotationIsAParseError) {
  std::string msg = message_of([] {
    parse(R"(
def forward(self, x: "f32[2, 4, 3][12, 3, 1]cpu", lengths: "i64[2][1]cpu"):
    _pack_padded_sequence = torch.ops.aten._pack_padded_sequence.default(x, lengths, True)
    getitem = _pack_padded_sequence[0]
    return (getitem,)
)");
  });
  EXPECT_NE(msg.find("'getitem' unpacks a result of node '_pack_padded_sequence'"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("it needs a type annotation"), std::string::npos) << msg;
  // A result no getitem unpacks has no metadata at all: the verifier names it.
  msg = message_of([] {
    verify(*parse(R"(
def forward(self, x: "f32[2, 4, 3][12, 3, 1]cpu", lengths: "i64[2][1]cpu"):
    _pack_padded_sequence = torch.ops.aten._pack_padded_sequence.default(x, lengths, True)
    getitem: "f32[6, 3][3, 1]cpu" = _pack_padded_sequence[0]
    return (getitem,)
)"));
  });
  EXPECT_NE(msg.find("result 1 depends on its inputs' values"), std::string::npos) << msg;
}

TEST(RecordedSizes, NonzeroWithAnAnnotationRunsOnTheValuesItRecorded) {
  CompiledGraph f(parse(R"(
def forward(self, x: "f32[4][1]cpu"):
    nonzero: "i64[2, 1][1, 1]cpu" = torch.ops.aten.nonzero.default(x)
    return (nonzero,)
)"));
  at::Tensor x = at::tensor(std::vector<float>{0, 3, 0, 5});
  EXPECT_TRUE(at::equal(f({x})[0].toTensor(), at::nonzero(x)));
  std::string msg = message_of([&] { f({at::ones({4})}); });
  EXPECT_NE(msg.find("result 0 has sizes [4, 1], but the graph was traced with i64[2, 1]"),
            std::string::npos)
      << msg;
}

}  // namespace
}  // namespace aotgrad

// aotgrad: tests of the functional collectives' declarations (src/ops/collective_ops.cc): the
// schemas of PyTorch 2.x's _c10d_functional, their meta functions, and the text form.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "infer_util.h"

namespace aotgrad {
namespace {

using testing::HasSubstr;
using testing_util::infer;

TEST(CollectiveOps, Schemas) {
  const OpTable& ops = aten_ops();
  EXPECT_EQ(ops.get("_c10d_functional::all_reduce").schema.text,
            "_c10d_functional::all_reduce(Tensor input, str reduce_op, str group_name) -> Tensor");
  EXPECT_EQ(ops.get("_c10d_functional::all_gather_into_tensor").schema.text,
            "_c10d_functional::all_gather_into_tensor(Tensor input, int group_size, str "
            "group_name) -> Tensor");
  EXPECT_EQ(ops.get("_c10d_functional::reduce_scatter_tensor").schema.text,
            "_c10d_functional::reduce_scatter_tensor(Tensor input, str reduce_op, int group_size, "
            "str group_name) -> Tensor");
  EXPECT_EQ(ops.get("_c10d_functional::broadcast").schema.text,
            "_c10d_functional::broadcast(Tensor input, int src, str group_name) -> Tensor");
  EXPECT_EQ(ops.get("_c10d_functional::wait_tensor").schema.text,
            "_c10d_functional::wait_tensor(Tensor tensor) -> Tensor");
  for (const char* name :
       {"_c10d_functional::all_reduce", "_c10d_functional::all_gather_into_tensor",
        "_c10d_functional::reduce_scatter_tensor", "_c10d_functional::broadcast",
        "_c10d_functional::wait_tensor"}) {
    const OpDef& op = ops.get(name);
    EXPECT_TRUE(op.has_tag(kCollective)) << name;
    EXPECT_EQ(tag_names(op.tags), "collective") << name;
    EXPECT_TRUE(op.derivative) << name;
    // Functional: they write no argument and alias none.
    EXPECT_TRUE(op.mutated_args().empty()) << name;
    EXPECT_EQ(op.return_alias_of(0), -1) << name;
  }
}

TEST(CollectiveOps, Meta) {
  // all_reduce and broadcast: a fresh contiguous tensor of the input's shape.
  EXPECT_EQ(infer("x: \"f32[4, 6][1, 4]\"",
                  "y = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')"),
            "f32[4, 6][6, 1]cpu");
  EXPECT_EQ(infer("x: \"i64[3]\"", "y = torch.ops._c10d_functional.broadcast.default(x, 1, '0')"),
            "i64[3][1]cpu");
  // all_gather_into_tensor: dim 0 times the group size ([group_size] for a 0-dim input).
  EXPECT_EQ(infer("x: \"f32[2, 3]\"",
                  "y = torch.ops._c10d_functional.all_gather_into_tensor.default(x, 3, '0')"),
            "f32[6, 3][3, 1]cpu");
  EXPECT_EQ(infer("x: \"f32[]\"",
                  "y = torch.ops._c10d_functional.all_gather_into_tensor.default(x, 2, '0')"),
            "f32[2][1]cpu");
  EXPECT_EQ(infer("x: \"f32[s0, 3]\"",
                  "y = torch.ops._c10d_functional.all_gather_into_tensor.default(x, 2, '0')"),
            "f32[2*s0, 3][3, 1]cpu");
  // reduce_scatter_tensor: dim 0 divided by the group size.
  EXPECT_EQ(infer("x: \"f32[6, 2]\"",
                  "y = torch.ops._c10d_functional.reduce_scatter_tensor.default(x, 'avg', 3, '0')"),
            "f32[2, 2][2, 1]cpu");
  // wait_tensor: its argument's metadata.
  EXPECT_EQ(infer("x: \"f32[4, 6]\"",
                  "a = torch.ops._c10d_functional.all_reduce.default(x, 'max', 'tp'); "
                  "y = torch.ops._c10d_functional.wait_tensor.default(a)"),
            "f32[4, 6][6, 1]cpu");
}

TEST(CollectiveOps, Errors) {
  EXPECT_THAT(
      infer("x: \"f32[4]\"", "y = torch.ops._c10d_functional.all_reduce.default(x, 'mean', '0')"),
      HasSubstr("Unrecognized reduce_op: 'mean'"));
  EXPECT_THAT(
      infer("x: \"c64[4]\"", "y = torch.ops._c10d_functional.all_reduce.default(x, 'max', '0')"),
      HasSubstr("reduce_op max does not support complex tensors"));
  EXPECT_THAT(
      infer("x: \"f32[4]\"", "y = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '')"),
      HasSubstr("argument 'group_name' must name a process group"));
  EXPECT_THAT(
      infer("x: \"f32[5, 2]\"",
            "y = torch.ops._c10d_functional.reduce_scatter_tensor.default(x, 'sum', 2, '0')"),
      HasSubstr("the first dimension of the input (5) is not divisible by the group size (2)"));
  EXPECT_THAT(
      infer("x: \"f32[]\"",
            "y = torch.ops._c10d_functional.reduce_scatter_tensor.default(x, 'sum', 2, '0')"),
      HasSubstr("at least one dimension"));
  EXPECT_THAT(infer("x: \"f32[4]\"",
                    "y = torch.ops._c10d_functional.all_gather_into_tensor.default(x, 0, '0')"),
              HasSubstr("argument 'group_size' must be at least 1, got 0"));
  EXPECT_THAT(
      infer("x: \"f32[4]\"", "y = torch.ops._c10d_functional.broadcast.default(x, -1, '0')"),
      HasSubstr("argument 'src' must be a rank, got -1"));
}

// A graph with collectives prints as PyTorch 2.x prints it and parses back to the same text.
TEST(CollectiveOps, TextRoundTrip) {
  const char* text = R"(class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 2][2, 1]cpu"):
        all_reduce: "f32[4, 2][2, 1]cpu" = torch.ops._c10d_functional.all_reduce.default(x, 'sum', '0')
        wait_tensor: "f32[4, 2][2, 1]cpu" = torch.ops._c10d_functional.wait_tensor.default(all_reduce);  all_reduce = None
        all_gather_into_tensor: "f32[8, 2][2, 1]cpu" = torch.ops._c10d_functional.all_gather_into_tensor.default(wait_tensor, 2, '0')
        wait_tensor_1: "f32[8, 2][2, 1]cpu" = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor);  all_gather_into_tensor = None
        reduce_scatter_tensor: "f32[4, 2][2, 1]cpu" = torch.ops._c10d_functional.reduce_scatter_tensor.default(wait_tensor_1, 'avg', 2, '0');  wait_tensor_1 = None
        wait_tensor_2: "f32[4, 2][2, 1]cpu" = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor);  reduce_scatter_tensor = None
        broadcast: "f32[4, 2][2, 1]cpu" = torch.ops._c10d_functional.broadcast.default(x, 1, '0');  x = None
        wait_tensor_3: "f32[4, 2][2, 1]cpu" = torch.ops._c10d_functional.wait_tensor.default(broadcast);  broadcast = None
        return (wait_tensor, wait_tensor_2, wait_tensor_3)
)";
  auto g = parse_graph(text, aten_ops());
  std::string printed = print_graph(*g);
  EXPECT_EQ(printed, text);
  EXPECT_EQ(print_graph(*parse_graph(printed, aten_ops())), printed);
}

}  // namespace
}  // namespace aotgrad

// Tests for functionalize_rng_ops: partitions in (forward and backward as text), the rewritten
// graphs out; and through min_cut_partition, a recomputed dropout replays its generator state.
#include "aotgrad/transforms/partition/rng_functionalize.h"

#include <gtest/gtest.h>

#include "../graph_text.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/partition/min_cut.h"

namespace aotgrad {
namespace {

Partition partition_of(const std::string& fw, const std::string& bw, size_t num_forward_outputs,
                       std::vector<std::string> saved) {
  Partition p;
  p.fw = parse_graph(fw, aten_ops());
  p.bw = parse_graph(bw, aten_ops());
  p.num_forward_outputs = num_forward_outputs;
  p.saved = std::move(saved);
  return p;
}

std::string print(const Graph& g) {
  verify(g);
  std::string text = print_graph(g, {.class_header = false});
  // The printed form parses back to the same graph.
  EXPECT_EQ(print_graph(*parse_graph(text, aten_ops()), {.class_header = false}), text);
  return text;
}

// sin -> native_dropout -> cos -> sum, partitioned with the dropout recomputed in the backward.
const char* kForward = R"fx(
def forward(self, primals_1: "f32[4, 8][8, 1]cpu"):
    sin: "f32[4, 8][8, 1]cpu" = torch.ops.aten.sin.default(primals_1)
    native_dropout = torch.ops.aten.native_dropout.default(sin, 0.5, True);  sin = None
    getitem: "f32[4, 8][8, 1]cpu" = native_dropout[0];  native_dropout = None
    cos: "f32[4, 8][8, 1]cpu" = torch.ops.aten.cos.default(getitem);  getitem = None
    sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(cos);  cos = None
    return (sum_1, primals_1)
)fx";

const char* kBackward = R"fx(
def forward(self, primals_1: "f32[4, 8][8, 1]cpu", tangents_1: "f32[][]cpu"):
    expand: "f32[4, 8][0, 0]cpu" = torch.ops.aten.expand.default(tangents_1, [4, 8]);  tangents_1 = None
    sin: "f32[4, 8][8, 1]cpu" = torch.ops.aten.sin.default(primals_1)
    native_dropout = torch.ops.aten.native_dropout.default(sin, 0.5, True);  sin = None
    getitem: "f32[4, 8][8, 1]cpu" = native_dropout[0]
    getitem_1: "b8[4, 8][8, 1]cpu" = native_dropout[1];  native_dropout = None
    sin_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.sin.default(getitem);  getitem = None
    neg: "f32[4, 8][8, 1]cpu" = torch.ops.aten.neg.default(sin_1);  sin_1 = None
    mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(expand, neg);  expand = neg = None
    native_dropout_backward: "f32[4, 8][8, 1]cpu" = torch.ops.aten.native_dropout_backward.default(mul, getitem_1, 2.0);  mul = getitem_1 = None
    cos_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.cos.default(primals_1);  primals_1 = None
    mul_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(native_dropout_backward, cos_1);  native_dropout_backward = cos_1 = None
    return [mul_1]
)fx";

TEST(RngFunctionalize, RecomputedDropoutReplaysTheForwardsState) {
  Partition p = partition_of(kForward, kBackward, 1, {"primals_1"});
  std::vector<RngStateSave> r = functionalize_rng_ops(p);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].name, "native_dropout");
  EXPECT_EQ(r[0].op, "aten::native_dropout");
  EXPECT_EQ(r[0].fw_call, "run_and_save_rng_state");
  EXPECT_EQ(r[0].fw_state, "getitem_1");
  EXPECT_EQ(r[0].bw_state, "rng_state_output_0");
  EXPECT_EQ(r[0].bw_call, "run_with_rng_state");
  EXPECT_EQ(p.saved, (std::vector<std::string>{"primals_1", "getitem_1"}));
  EXPECT_EQ(print(*p.fw), R"fx(def forward(self, primals_1: "f32[4, 8][8, 1]cpu"):
    sin: "f32[4, 8][8, 1]cpu" = torch.ops.aten.sin.default(primals_1)
    run_and_save_rng_state = torch.ops.higher_order.run_and_save_rng_state(torch.ops.aten.native_dropout.default, sin, 0.5, True);  sin = None
    getitem_1: "u8[5056][1]cpu" = run_and_save_rng_state[0]
    getitem_2 = run_and_save_rng_state[1];  run_and_save_rng_state = None
    getitem: "f32[4, 8][8, 1]cpu" = getitem_2[0];  getitem_2 = None
    cos: "f32[4, 8][8, 1]cpu" = torch.ops.aten.cos.default(getitem);  getitem = None
    sum_1: "f32[][]cpu" = torch.ops.aten.sum.default(cos);  cos = None
    return (sum_1, primals_1, getitem_1)
)fx");
  EXPECT_EQ(
      print(*p.bw),
      R"fx(def forward(self, primals_1: "f32[4, 8][8, 1]cpu", rng_state_output_0: "u8[5056][1]cpu", tangents_1: "f32[][]cpu"):
    expand: "f32[4, 8][0, 0]cpu" = torch.ops.aten.expand.default(tangents_1, [4, 8]);  tangents_1 = None
    sin: "f32[4, 8][8, 1]cpu" = torch.ops.aten.sin.default(primals_1)
    run_with_rng_state = torch.ops.higher_order.run_with_rng_state(rng_state_output_0, torch.ops.aten.native_dropout.default, sin, 0.5, True);  rng_state_output_0 = sin = None
    getitem: "f32[4, 8][8, 1]cpu" = run_with_rng_state[0]
    getitem_1: "b8[4, 8][8, 1]cpu" = run_with_rng_state[1];  run_with_rng_state = None
    sin_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.sin.default(getitem);  getitem = None
    neg: "f32[4, 8][8, 1]cpu" = torch.ops.aten.neg.default(sin_1);  sin_1 = None
    mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(expand, neg);  expand = neg = None
    native_dropout_backward: "f32[4, 8][8, 1]cpu" = torch.ops.aten.native_dropout_backward.default(mul, getitem_1, 2.0);  mul = getitem_1 = None
    cos_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.cos.default(primals_1);  primals_1 = None
    mul_1: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(native_dropout_backward, cos_1);  native_dropout_backward = cos_1 = None
    return [mul_1]
)fx");
}

// States go after the saved tensors and before saved SymInts, in both graphs; random ops only the
// forward computes, and calls of a tensor-valued random op, are handled too.
TEST(RngFunctionalize, StatesGoBeforeSavedSymIntsOneStatePerRecomputedOp) {
  Partition p = partition_of(R"fx(
def forward(self, primals_1: "f32[s0][1]cpu"):
    sym_size: "Sym(s0)" = torch.ops.aten.sym_size.int(primals_1, 0)
    rand_like: "f32[s0][1]cpu" = torch.ops.aten.rand_like.default(primals_1)
    randn_like: "f32[s0][1]cpu" = torch.ops.aten.randn_like.default(primals_1)
    mul: "f32[s0][1]cpu" = torch.ops.aten.mul.Tensor(rand_like, randn_like)
    mul_1: "f32[s0][1]cpu" = torch.ops.aten.mul.Tensor(mul, primals_1)
    return (mul_1, primals_1, randn_like, sym_size)
)fx",
                             R"fx(
def forward(self, primals_1: "f32[s0][1]cpu", randn_like: "f32[s0][1]cpu", sym_size: "Sym(s0)", tangents_1: "f32[s0][1]cpu"):
    rand_like: "f32[s0][1]cpu" = torch.ops.aten.rand_like.default(primals_1)
    mul: "f32[s0][1]cpu" = torch.ops.aten.mul.Tensor(rand_like, randn_like)
    mul_2: "f32[s0][1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, mul)
    view: "f32[s0][1]cpu" = torch.ops.aten.view.default(mul_2, [sym_size])
    return [view]
)fx",
                             1, {"primals_1", "randn_like", "sym_size"});
  std::vector<RngStateSave> r = functionalize_rng_ops(p);
  ASSERT_EQ(r.size(), 1u);  // randn_like is saved, not recomputed
  EXPECT_EQ(r[0].name, "rand_like");
  EXPECT_EQ(p.saved, (std::vector<std::string>{"primals_1", "randn_like", "getitem", "sym_size"}));
  std::string fw = print(*p.fw);
  EXPECT_NE(fw.find("    run_and_save_rng_state = torch.ops.higher_order.run_and_save_rng_state("
                    "torch.ops.aten.rand_like.default, primals_1)\n"
                    "    getitem: \"u8[5056][1]cpu\" = run_and_save_rng_state[0]\n"
                    "    getitem_1: \"f32[s0][1]cpu\" = run_and_save_rng_state[1];  "
                    "run_and_save_rng_state = None\n"),
            std::string::npos)
      << fw;
  EXPECT_NE(fw.find("return (mul_1, primals_1, randn_like, getitem, sym_size)"), std::string::npos)
      << fw;
  std::string bw = print(*p.bw);
  EXPECT_NE(
      bw.find(
          "def forward(self, primals_1: \"f32[s0][1]cpu\", randn_like: \"f32[s0][1]cpu\", "
          "rng_state_output_0: \"u8[5056][1]cpu\", sym_size: \"Sym(s0)\", tangents_1: "
          "\"f32[s0][1]cpu\"):\n"
          "    run_with_rng_state: \"f32[s0][1]cpu\" = "
          "torch.ops.higher_order.run_with_rng_state(rng_state_output_0, "
          "torch.ops.aten.rand_like.default, primals_1);  rng_state_output_0 = primals_1 = None\n"
          "    mul: \"f32[s0][1]cpu\" = torch.ops.aten.mul.Tensor(run_with_rng_state, "
          "randn_like);"),
      std::string::npos)
      << bw;
}

TEST(RngFunctionalize, NothingToDoWithoutRecomputedRandomOps) {
  Partition p = partition_of(kForward, R"fx(
def forward(self, primals_1: "f32[4, 8][8, 1]cpu", tangents_1: "f32[][]cpu"):
    cos: "f32[4, 8][8, 1]cpu" = torch.ops.aten.cos.default(primals_1)
    mul: "f32[4, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(tangents_1, cos)
    return [mul]
)fx",
                             1, {"primals_1"});
  std::string fw = print_graph(*p.fw), bw = print_graph(*p.bw);
  EXPECT_TRUE(functionalize_rng_ops(p).empty());
  EXPECT_EQ(print_graph(*p.fw), fw);
  EXPECT_EQ(print_graph(*p.bw), bw);
  EXPECT_EQ(p.saved, (std::vector<std::string>{"primals_1"}));
}

TEST(RngFunctionalize, CudaRandomOpsAreAnError) {
  Partition p = partition_of(R"fx(
def forward(self, primals_1: "f32[4][1]cuda:0"):
    rand_like: "f32[4][1]cuda:0" = torch.ops.aten.rand_like.default(primals_1)
    mul: "f32[4][1]cuda:0" = torch.ops.aten.mul.Tensor(rand_like, primals_1)
    return (mul, primals_1)
)fx",
                             R"fx(
def forward(self, primals_1: "f32[4][1]cuda:0", tangents_1: "f32[4][1]cuda:0"):
    rand_like: "f32[4][1]cuda:0" = torch.ops.aten.rand_like.default(primals_1)
    mul: "f32[4][1]cuda:0" = torch.ops.aten.mul.Tensor(tangents_1, rand_like)
    return [mul]
)fx",
                             1, {"primals_1"});
  try {
    functionalize_rng_ops(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.message(),
              "node 'rand_like' (aten::rand_like): only the CPU generator's state can be saved for "
              "recomputation; this random op runs on CUDA");
    EXPECT_EQ(e.loc().line, 3);
  }
}

// --- through the min-cut partition ---------------------------------------------------------------

const char* kDropout = R"fx(
def forward(self, x: "f32[4, 8]"):
    sin = torch.ops.aten.sin.default(x)
    native_dropout = torch.ops.aten.native_dropout.default(sin, 0.5, True)
    getitem = native_dropout[0]
    cos = torch.ops.aten.cos.default(getitem)
    sum_1 = torch.ops.aten.sum.default(cos)
    return (sum_1,)
)fx";

bool calls(const Graph& g, const std::string& op, const std::string& wrapped = "") {
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call && n->op()->name == op &&
        (wrapped.empty() || (n->op()->wrapped && n->op()->wrapped->name == wrapped)))
      return true;
  return false;
}

TEST(RngFunctionalize, MinCutRecomputesATaggedDropoutWithItsState) {
  JointGraph j = joint_graph(kDropout, {true});
  for (Node* n : j.graph->nodes())
    if (n->name() == "native_dropout") n->info().recompute = RecomputePolicy::MustRecompute;
  MinCutExplain e;
  Partition p = min_cut_partition(j, {}, &e);
  verify(*p.fw);
  verify(*p.bw);
  EXPECT_TRUE(calls(*p.fw, kRunAndSaveRngState, "aten::native_dropout"));
  EXPECT_FALSE(calls(*p.fw, "aten::native_dropout"));
  EXPECT_TRUE(calls(*p.bw, kRunWithRngState, "aten::native_dropout"));
  EXPECT_FALSE(calls(*p.bw, "aten::native_dropout"));
  ASSERT_FALSE(p.saved.empty());
  const std::string state = p.saved.back();
  const Node* fw_state = p.fw->find(state);
  ASSERT_NE(fw_state, nullptr);
  EXPECT_EQ(fw_state->meta().annotation(), "u8[5056][1]cpu");
  // The explanation lists the state with why, and the dropout as recomputed.
  ASSERT_EQ(e.saved.size(), p.saved.size());
  EXPECT_EQ(e.saved.back().name, state);
  EXPECT_EQ(e.saved.back().why, "rng state for recomputed native_dropout");
  EXPECT_EQ(e.saved.back().bytes, kCpuRngStateBytes);
  EXPECT_NE(explain_text(e).find("  " + state +
                                 " u8[5056][1]cpu 5056 bytes: rng state for recomputed "
                                 "native_dropout\n"),
            std::string::npos)
      << explain_text(e);
  bool listed = false;
  for (const auto& r : e.recomputed)
    listed = listed || (r.name == "native_dropout" && r.op == "aten::native_dropout");
  EXPECT_TRUE(listed) << explain_text(e);
  int64_t bytes = 0;
  for (const auto& s : e.saved) bytes += s.bytes;
  EXPECT_EQ(e.saved_bytes, bytes);

  // Off: the tagged dropout is saved ("random op"), nothing is rewritten.
  MinCutOptions off;
  off.recompute_random_ops = false;
  Partition q = min_cut_partition(j, off);
  EXPECT_TRUE(calls(*q.fw, "aten::native_dropout"));
  EXPECT_FALSE(calls(*q.bw, "aten::native_dropout"));
  EXPECT_FALSE(calls(*q.bw, kRunWithRngState));
  // Untagged: saved as well.
  JointGraph untagged = joint_graph(kDropout, {true});
  Partition u = min_cut_partition(untagged);
  EXPECT_FALSE(calls(*u.fw, kRunAndSaveRngState));
  EXPECT_FALSE(calls(*u.bw, kRunWithRngState));
}

}  // namespace
}  // namespace aotgrad

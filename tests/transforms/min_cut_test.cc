// Tests for the min-cut rematerialization partitioner: joint graphs in, forward/backward graphs,
// saved values and the explanation out; optimality against a brute force on random graphs.
#include "aotgrad/transforms/partition/min_cut.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "../graph_text.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/transforms/functionalize.h"

namespace aotgrad {
namespace {

/// The forward or backward graph as graph_text prints it, without the last newline.
std::string graph_body(const Graph& g) {
  std::string text = graph_text(g);
  text.pop_back();
  return text;
}

struct PartRun {
  Partition p;
  MinCutExplain e;
};

PartRun partition(const JointGraph& j, const MinCutOptions& o = {}) {
  PartRun r;
  r.p = min_cut_partition(j, o, &r.e);
  verify(*r.p.fw);
  verify(*r.p.bw);
  return r;
}

/// The ban reason of node `name` in the explanation, or "" when it is not banned.
std::string reason(const MinCutExplain& e, const std::string& name) {
  for (const auto& b : e.banned)
    if (b.name == name) return b.reason;
  return "";
}

std::vector<std::string> recomputed(const MinCutExplain& e) {
  std::vector<std::string> out;
  for (const auto& r : e.recomputed) out.push_back(r.name);
  return out;
}

/// The joint graph of tests/data/joints/NAME.fx (its forward graph is in the file's comment).
JointGraph joint(const std::string& name) {
  return joint_from_text(read_text(std::string(AOTGRAD_TEST_DATA) + "/joints/" + name + ".fx"));
}

Node* find(const JointGraph& j, const std::string& name) {
  Node* n = j.graph->find(name);
  EXPECT_NE(n, nullptr) << name;
  return n;
}

// §13.20: x does not require grad. The forward saves x and relu's output (as detach_1, the alias
// the joint graph hands threshold_backward, which is the cut nearest the backward, as networkx
// returns it), and nothing else: addmm's output is not kept, relu is banned from recomputation
// because the output materializes it ("materialized backwards: relu (detach, output)").
TEST(MinCut, Seed13_20_LinearReluSavesInputAndReluOutput) {
  PartRun r = partition(joint("linear_relu"));
  EXPECT_EQ(r.p.saved, (std::vector<std::string>{"primals_1", "detach_1"}));
  EXPECT_EQ(graph_body(*r.p.fw),
            "def forward(self, primals_1, primals_2, primals_3):\n"
            "t = torch.ops.aten.t.default(primals_2)\n"
            "addmm = torch.ops.aten.addmm.default(primals_3, primals_1, t)\n"
            "relu = torch.ops.aten.relu.default(addmm)\n"
            "detach = torch.ops.aten.detach.default(relu)\n"
            "detach_1 = torch.ops.aten.detach.default(detach)\n"
            "return (relu, primals_1, detach_1)");
  EXPECT_EQ(
      graph_body(*r.p.bw),
      "def forward(self, primals_1, detach_1, tangents_1):\n"
      "threshold_backward = torch.ops.aten.threshold_backward.default(tangents_1, detach_1, 0)\n"
      "t_1 = torch.ops.aten.t.default(threshold_backward)\n"
      "mm = torch.ops.aten.mm.default(t_1, primals_1)\n"
      "t_2 = torch.ops.aten.t.default(mm)\n"
      "sum_1 = torch.ops.aten.sum.dim_IntList(threshold_backward, [0], True)\n"
      "view = torch.ops.aten.view.default(sum_1, [16])\n"
      "t_3 = torch.ops.aten.t.default(t_2)\n"
      "return [None, t_3, view]");
  // Capacities: x 128 bytes x 1.1 (one use from the backward); relu's 256 bytes x 1.1.
  EXPECT_EQ(explain_text(r.e),
            "saved: 2 values, 384 bytes (256 bytes of activations), cut 421\n"
            "  primals_1 f32[4, 8][8, 1]cpu 128 bytes (input): primal input\n"
            "  detach_1 f32[4, 16][16, 1]cpu 256 bytes: min cut\n"
            "recomputed: 0 ops\n"
            "banned: 5 nodes\n"
            "  primals_1 placeholder: primal input\n"
            "  primals_2 placeholder: primal input\n"
            "  primals_3 placeholder: primal input\n"
            "  addmm aten::addmm: not in recomputable allowlist\n"
            "  relu aten::relu: materialized in backward\n");
}

// The partitioner is fed joint-graph text, as `aotgrad compile --dump` (and PyTorch's
// aot_joint_graph log) prints it, annotations and release statements included. Each file of
// tests/data/joints is what build_joint makes of the forward graph in its comment, differentiated
// w.r.t. the inputs it names.
TEST(MinCut, JointFilesAreWhatBuildJointMakes) {
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(AOTGRAD_TEST_DATA) + "/joints")) {
    std::ifstream in(entry.path());
    std::string line, forward, joint_text;
    std::vector<bool> rg;
    bool in_forward = false;
    while (std::getline(in, line)) {
      if (line.rfind("#", 0) != 0) {
        joint_text += line + "\n";
        continue;
      }
      if (size_t k = line.find("(requires grad: "); k != std::string::npos) {
        std::string list = line.substr(k + 16, line.find(')', k) - k - 16);
        std::stringstream items(list);  // "x no, w yes"
        for (std::string item; std::getline(items, item, ',');)
          rg.push_back(item.substr(item.rfind(' ') + 1) == "yes");
      }
      if (line == "#")
        in_forward = true;
      else if (in_forward)
        forward += line.substr(2) + "\n";
    }
    SCOPED_TRACE(entry.path().filename().string());
    ASSERT_FALSE(forward.empty());
    JointGraph built = joint_graph(forward, rg);
    EXPECT_EQ(print_graph(*built.graph), joint_text.substr(joint_text.find("class GraphModule")));
    JointGraph read = joint_from_text(joint_text);
    EXPECT_EQ(read.primal_requires_grad, built.primal_requires_grad);
    EXPECT_EQ(read.tangent_of_output, built.tangent_of_output);
    ++files;
  }
  EXPECT_GE(files, 10);
}

// A cheap pointwise chain is recomputed from its input rather than saved: cos(sin(x)) is needed by
// w's gradient; saving x costs 1.1^3 x its bytes, saving cos 2 x 1.1 x (it fuses into its users).
TEST(MinCut, RecomputesCheapPointwiseChain) {
  PartRun r = partition(joint("sin_cos_mul"));
  EXPECT_EQ(r.p.saved, (std::vector<std::string>{"primals_1"}));
  EXPECT_EQ(recomputed(r.e), (std::vector<std::string>{"sin", "cos"}));
  EXPECT_EQ(r.e.saved_activation_bytes, 0);
  // The recomputation runs where the autograd engine would need it: after the tangent's expand.
  EXPECT_EQ(graph_body(*r.p.bw),
            "def forward(self, primals_1, tangents_1):\n"
            "expand = torch.ops.aten.expand.default(tangents_1, [64])\n"
            "sin = torch.ops.aten.sin.default(primals_1)\n"
            "cos = torch.ops.aten.cos.default(sin)\n"
            "mul_1 = torch.ops.aten.mul.Tensor(expand, cos)\n"
            "return [None, mul_1]");
  // The default partition keeps cos instead.
  Partition d = default_partition(joint("sin_cos_mul"));
  EXPECT_EQ(d.saved, (std::vector<std::string>{"cos"}));
}

TEST(MinCut, BanReasons) {
  // mm is not in the allowlist; relu feeds a backward mm (it must be materialized there); the
  // sum is 16x smaller than its input; placeholders are primal inputs. (PyTorch 2.x's bans:
  // recompute_pointwise_from_saved, on by default, lifts the one on div, whose inputs the backward
  // reads anyway -- min_cut_pointwise_test.cc.)
  MinCutOptions pytorch2;
  pytorch2.recompute_pointwise_from_saved = false;
  PartRun r = partition(joint("mm_relu_normalize_mm"), pytorch2);
  EXPECT_EQ(reason(r.e, "primals_1"), "primal input");
  EXPECT_EQ(reason(r.e, "primals_2"), "primal input");
  EXPECT_EQ(reason(r.e, "mm"), "not in recomputable allowlist");
  EXPECT_EQ(reason(r.e, "sum_1"), "reduction op");
  EXPECT_EQ(reason(r.e, "div"), "materialized in backward");

  // max_dist_from_bw: forward values further from their backward use are not recomputed.
  MinCutOptions o;
  o.max_dist_from_bw = 2;
  PartRun far = partition(joint("sin_cos_exp_mul"), o);
  EXPECT_EQ(reason(far.e, "sin"), "too far from backward");
  EXPECT_EQ(reason(far.e, "cos"), "");
  EXPECT_EQ(far.p.saved, (std::vector<std::string>{"exp"}));
  PartRun near = partition(joint("sin_cos_exp_mul"));
  EXPECT_EQ(reason(near.e, "sin"), "");
  EXPECT_EQ(near.p.saved, (std::vector<std::string>{"primals_1"}));
}

TEST(MinCut, MustSaveAndRandomOpsAreBanned) {
  JointGraph j = joint("sin_dropout_mul");
  find(j, "sin")->info().recompute = RecomputePolicy::MustSave;
  // With recompute_random_ops off, a random op tagged for recomputation is saved.
  find(j, "native_dropout")->info().recompute = RecomputePolicy::MustRecompute;
  MinCutOptions off;
  off.recompute_random_ops = false;
  PartRun r = partition(j, off);
  EXPECT_EQ(reason(r.e, "sin"), "marked MUST_SAVE");
  EXPECT_EQ(reason(r.e, "native_dropout"), "random op");
  EXPECT_TRUE(recomputed(r.e).empty());
  for (const Node* n : r.p.bw->nodes())
    EXPECT_FALSE(n->kind() == NodeKind::Call && n->op()->schema.name == "aten::native_dropout")
        << n->name();
  // By default the tag is honoured: the backward recomputes it from the saved sin, replaying the
  // forward's generator state (rng_functionalize_test.cc).
  PartRun d = partition(j);
  EXPECT_EQ(reason(d.e, "native_dropout"), "");
  EXPECT_EQ(recomputed(d.e), (std::vector<std::string>{"native_dropout"}));
  ASSERT_EQ(d.p.saved.size(), 2u);  // sin and the generator state
  EXPECT_EQ(d.p.saved[0], "sin");
  EXPECT_EQ(d.e.saved.back().why, "rng state for recomputed native_dropout");
}

// Effectful calls (with_effects, Note [Effect tokens]) are banned as "effectful", as collectives
// are, whatever a checkpoint policy says: the backward never repeats a print. The forward takes
// the token first and returns the final one first; the token gets no gradient output.
TEST(MinCut, EffectfulCallsAreBannedAndStayInTheForward) {
  auto g = parse_text(R"(
def forward(self, x: "f32[8]"):
    _print = torch.ops.aten._print.default('moo')
    sin = torch.ops.aten.sin.default(x)
    _print_1 = torch.ops.aten._print.default('boo')
    mul = torch.ops.aten.mul.Tensor(sin, sin)
    return (mul,)
)");
  FunctionalizeResult f = functionalize(*g);
  ASSERT_EQ(f.meta.num_tokens, 1);
  JointGraph j = build_joint(*f.graph, {true}, 1);
  EXPECT_EQ(j.num_primals, 2u);
  EXPECT_EQ(j.num_tokens, 1u);
  EXPECT_EQ(j.primal_requires_grad, (std::vector<bool>{false, true}));
  for (const char* name : {"with_effects", "with_effects_1"})
    find(j, name)->info().recompute = RecomputePolicy::MustRecompute;
  PartRun r = partition(j);
  EXPECT_EQ(reason(r.e, "with_effects"), "effectful");
  EXPECT_EQ(reason(r.e, "with_effects_1"), "effectful");
  for (const std::string& name : recomputed(r.e))
    EXPECT_NE(name.rfind("with_effects", 0), 0u) << name;
  std::vector<Node*> phs = r.p.fw->placeholders();
  ASSERT_EQ(phs.size(), 2u);
  EXPECT_EQ(phs[0]->name(), "primals_1");
  const Arg& fw_out = r.p.fw->output()->args()[0];
  ASSERT_FALSE(fw_out.list.empty());
  EXPECT_EQ(arg_to_string(fw_out.list[0]), "getitem_2");  // the final token
  for (const Node* n : r.p.bw->nodes())
    EXPECT_FALSE(n->kind() == NodeKind::Call && is_effectful(*n->op())) << n->name();
  // One gradient, x's: the token has none.
  EXPECT_EQ(r.p.bw->output()->args()[0].list.size(), 1u);
}

// MUST_RECOMPUTE / PREFER_RECOMPUTE force recomputation even of a node banned otherwise.
TEST(MinCut, RecomputeTagsForceRecomputation) {
  // Untagged, relu is saved -- as `t`, the backward's transposed view of it, which costs the same
  // as relu and is the cut nearest the backward. PyTorch 2.x bans relu;
  // recompute_pointwise_from_saved (the default) lets the cut recompute it from the input x, but x
  // costs more than relu's output.
  MinCutOptions pytorch2;
  pytorch2.recompute_pointwise_from_saved = false;
  EXPECT_EQ(reason(partition(joint("relu_mm"), pytorch2).e, "relu"), "materialized in backward");
  PartRun plain = partition(joint("relu_mm"));
  EXPECT_EQ(reason(plain.e, "relu"), "");
  EXPECT_EQ(plain.p.saved, (std::vector<std::string>{"t"}));
  EXPECT_EQ(plain.e.saved_activation_bytes, 16 * 16 * 4);
  for (RecomputePolicy tag : {RecomputePolicy::MustRecompute, RecomputePolicy::PreferRecompute}) {
    JointGraph j = joint("relu_mm");
    find(j, "relu")->info().recompute = tag;
    PartRun r = partition(j);
    EXPECT_EQ(reason(r.e, "relu"), "");
    EXPECT_EQ(r.p.saved, (std::vector<std::string>{"primals_1"}));
    EXPECT_EQ(recomputed(r.e), (std::vector<std::string>{"relu"}));
  }
}

// recompute_views: a view is never saved; its base is.
TEST(MinCut, RecomputeViews) {
  PartRun r = partition(joint("mm_t_mm"));
  ASSERT_EQ(r.p.saved.size(), 1u);
  EXPECT_NE(r.p.saved[0], "mm");
  MinCutOptions o;
  o.recompute_views = true;
  PartRun v = partition(joint("mm_t_mm"), o);
  EXPECT_EQ(v.p.saved, (std::vector<std::string>{"mm"}));
}

// Parameters are free to save when marked static: the backward recomputes cheap ops of them
// instead of keeping their results.
TEST(MinCut, StaticInputsAreFreeToSave) {
  MinCutOptions o;
  o.static_lifetime_inputs = {false, true};
  PartRun r = partition(joint("half_cast_mul"), o);
  EXPECT_EQ(r.p.saved, (std::vector<std::string>{"primals_2"}));
  EXPECT_EQ(r.e.cut_value, 0);
  EXPECT_EQ(recomputed(r.e), (std::vector<std::string>{"_to_copy"}));
  // Otherwise the half-size cast is cheaper to keep than the parameter.
  PartRun plain = partition(joint("half_cast_mul"));
  EXPECT_EQ(plain.p.saved, (std::vector<std::string>{"_to_copy"}));
}

// §13.15: sizes come from SymInt hints; a size without a hint counts 4096 elements.
TEST(MinCut, SymbolicSizesWithoutHintCount4096Elements) {
  PartRun r = partition(joint("symbolic_sin_mul"));
  ASSERT_FALSE(r.e.saved.empty());
  EXPECT_EQ(r.e.saved[0].name, "primals_1");
  EXPECT_EQ(r.e.saved[0].bytes, 4096 * 4);
  EXPECT_EQ(recomputed(r.e), (std::vector<std::string>{"sin"}));
}

// CSE runs on the joint graph first: the forward's duplicate expressions are saved once.
TEST(MinCut, RunsCseFirst) {
  PartRun r = partition(joint("duplicate_mm"));
  EXPECT_GE(r.e.cse_merged, 1);
  for (const std::string& s : r.p.saved) EXPECT_NE(s, "mm_1");
}

// --- optimality ----------------------------------------------------------------------------------

/// A random forward graph of pointwise, matmul, reduction and view ops over [4, 4] inputs,
/// returning a scalar loss (and sometimes an intermediate value too).
std::unique_ptr<Graph> random_forward(std::mt19937& rng, std::vector<bool>& rg) {
  const OpTable& ops = aten_ops();
  auto g = std::make_unique<Graph>();
  std::uniform_int_distribution<int> n_inputs(2, 3), n_ops(3, 8), coin(0, 1);
  int ni = n_inputs(rng);
  std::vector<Node*> vals;
  rg.clear();
  for (int i = 0; i < ni; ++i) {
    vals.push_back(g->add_placeholder(
        "in" + std::to_string(i), ValueMeta::of(make_tensor_meta(ScalarType::Float32, {4, 4}))));
    rg.push_back(coin(rng) == 1);
  }
  rg[std::uniform_int_distribution<int>(0, ni - 1)(rng)] = true;
  // square: a [4, 4] f32 value (for mm and t).
  auto pick = [&](bool square) {
    std::vector<Node*> c;
    for (Node* v : vals)
      if (!square || (v->tensor_meta().sizes[1].hint_or(0) == 4 &&
                      v->tensor_meta().dtype == ScalarType::Float32))
        c.push_back(v);
    return c[std::uniform_int_distribution<size_t>(0, c.size() - 1)(rng)];
  };
  int n = n_ops(rng);
  for (int k = 0; k < n; ++k) {
    int kind = std::uniform_int_distribution<int>(0, 11)(rng);
    Node* out = nullptr;
    if (kind <= 3) {
      const char* unary[] = {"relu.default", "sin.default", "exp.default", "sigmoid.default"};
      out = g->add_call(ops.get(unary[kind]), {Arg(pick(false))});
    } else if (kind <= 6) {
      const char* binary[] = {"add.Tensor", "mul.Tensor", "sub.Tensor"};
      out = g->add_call(ops.get(binary[kind - 4]), {Arg(pick(false)), Arg(pick(false))});
    } else if (kind == 7) {
      out = g->add_call(ops.get("mm.default"), {Arg(pick(true)), Arg(pick(true))});
    } else if (kind == 8) {
      out = g->add_call(ops.get("sum.dim_IntList"),
                        {Arg(pick(false)), Arg::of_ints({1}), Arg::of_bool(true)});
    } else if (kind == 9) {
      out = g->add_call(ops.get("t.default"), {Arg(pick(true))});
    } else {  // casts change the bytes a value costs
      out = g->add_call(
          ops.get("_to_copy.default"), {Arg(pick(false))},
          {{"dtype", Arg::of_dtype(kind == 10 ? ScalarType::Float64 : ScalarType::Float16)}});
    }
    vals.push_back(out);
  }
  Node* loss = g->add_call(ops.get("sum.default"), {Arg(vals.back())});
  std::vector<Arg> outs{Arg(loss)};
  if (coin(rng)) outs.push_back(Arg(vals[ni + std::uniform_int_distribution<int>(0, n - 1)(rng)]));
  g->set_output(Arg::of_tuple(outs));
  return g;
}

/// Whether the backward can run from `saved` and the tangents: every value it needs is saved, a
/// tangent, or recomputable (not banned, not a primal) from such values.
bool valid_save_set(const JointNodeClasses& c, const std::unordered_set<const Node*>& banned,
                    const std::vector<bool>& saved, const Graph& g, size_t num_forward_outputs) {
  std::vector<bool> avail(c.nodes.size(), false);
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const Node* n = c.nodes[i];
    if (saved[i] || (c.tangents_closure[i] && n->kind() == NodeKind::Placeholder)) {
      avail[i] = true;
      continue;
    }
    if (n->kind() != NodeKind::Call && n->kind() != NodeKind::GetItem) continue;
    if (banned.count(n)) continue;
    bool ok = true;
    for (const Arg& a : n->args()) a.for_each_node([&](Node* m) { ok = ok && avail[c.at(m)]; });
    avail[i] = ok;
  }
  for (size_t i = 0; i < c.nodes.size(); ++i)
    if (c.tangents_closure[i] && !avail[i]) return false;
  std::vector<Arg> outs;
  for (const Arg& a : g.output()->args()[0].list) outs.push_back(a);
  for (size_t k = num_forward_outputs; k < outs.size(); ++k) {
    bool ok = true;
    outs[k].for_each_node([&](Node* m) { ok = ok && avail[c.at(m)]; });
    if (!ok) return false;
  }
  return true;
}

// On random joint graphs the cut's cost is the minimum, over every save set the backward can run
// from, of the summed capacities; the chosen set is one of them.
TEST(MinCut, CutIsOptimalOnRandomJointGraphs) {
  std::mt19937 rng(1234);
  int checked = 0, nontrivial = 0;
  for (int iter = 0; iter < 800 && checked < 120; ++iter) {
    std::vector<bool> rg;
    auto fw = random_forward(rng, rg);
    verify(*fw);
    JointGraph j = build_joint(*fw, rg);
    JointNodeClasses c = classify_joint_nodes(*j.graph, j);
    MinCutSolution sol = solve_min_cut(c, MinCutOptions{});
    std::unordered_set<const Node*> banned;
    for (auto& [n, why] : sol.banned) banned.insert(n);
    // Candidates: every node with a finite in->out capacity.
    std::vector<size_t> cand;
    for (size_t i = 0; i < c.nodes.size(); ++i) {
      const int64_t* w = sol.weight.find(c.nodes[i]);
      if (w && *w >= 0) cand.push_back(i);
    }
    if (cand.size() > 16) continue;
    int64_t best = -1;
    std::vector<bool> saved(c.nodes.size());
    for (uint32_t mask = 0; mask < (1u << cand.size()); ++mask) {
      int64_t cost = 0;
      std::fill(saved.begin(), saved.end(), false);
      for (size_t k = 0; k < cand.size(); ++k)
        if (mask >> k & 1u) {
          saved[cand[k]] = true;
          cost += sol.weight.at(c.nodes[cand[k]]);
        }
      if (best >= 0 && cost >= best) continue;
      if (valid_save_set(c, banned, saved, *j.graph, j.num_forward_outputs)) best = cost;
    }
    ASSERT_GE(best, 0);
    EXPECT_EQ(sol.cut_value, best) << print_graph(*j.graph);
    std::fill(saved.begin(), saved.end(), false);
    for (const Node* s : sol.saved) saved[c.at(s)] = true;
    EXPECT_TRUE(valid_save_set(c, banned, saved, *j.graph, j.num_forward_outputs))
        << print_graph(*j.graph);
    // And the graphs built from it verify.
    Partition p = partition_with_saved_values(*j.graph, c, sol.saved);
    verify(*p.fw);
    verify(*p.bw);
    ++checked;
    if (sol.cut_value > 0) ++nontrivial;
  }
  EXPECT_GE(checked, 80);
  EXPECT_GE(nontrivial, 40);
}

}  // namespace
}  // namespace aotgrad

// aotgrad: the min-cut rematerialization partitioner (§13.5, §13.9, §13.14, §13.15), as
// torch/_functorch/partitioners.py's min_cut_rematerialization_partition.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/node_map.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/op_classes.h"
#include "aotgrad/transforms/partition/cost_model.h"
#include "aotgrad/transforms/partition/knapsack.h"
#include "aotgrad/transforms/partition/memory_schedule.h"
#include "aotgrad/transforms/partition/partition.h"

namespace aotgrad {

/// How the activation memory budget prices a plan (memory_budget.h).
enum class BudgetPricing { kPeak, kSum };

/// The partitioner's switches; the defaults are functorch's config (v2.x).
struct MinCutOptions {
  /// Ban heuristics (MinCutOptions / config.ban_recompute_*).
  bool ban_if_used_far_apart = true;
  bool ban_if_long_fusible_chains = true;
  bool ban_if_materialized_backward = true;
  /// A cheap op (of the recomputable allowlist and not a view: silu, gelu, mul, add, a mean, ...)
  /// that the backward can compute from values it has anyway -- primals, or values a backward op
  /// uses, directly or through views -- through at most three such calls (its own included) is not
  /// banned by ban_if_materialized_backward or ban_if_used_far_apart: the cut may recompute it in
  /// the backward instead of saving its output, as functorch 1.13's min-cut does (it has neither
  /// ban). An activation that feeds a norm or a convolution, whose backward reads the activation,
  /// is then kept once, as its input, instead of twice; so is a squeeze-excitation's mean, or a
  /// residual sum of activations. Costs up to three kernels in the backward per value not saved.
  /// Off: PyTorch 2.x's bans, unchanged.
  bool recompute_pointwise_from_saved = true;
  /// With recompute_pointwise_from_saved: a normalization (OpClasses::is_normalization) whose
  /// inputs the backward has anyway -- BatchNorm's backward reads its input -- counts as one cheap
  /// call too, so the cut may run it again in the backward instead of saving what follows it: a
  /// convolution's output is kept once, for BatchNorm's backward, and the BN-ReLU after it is
  /// recomputed for the next convolution's backward (in-place activated BatchNorm's trade; the
  /// same kernel on the same input gives the same values). Off by default (PyTorch 2.x bans the
  /// norm: it is not in the allowlist); the memory budget weighs it as the plan "recompute norms".
  bool recompute_norms_from_saved = false;
  /// On: only ops of the recomputable allowlist are recomputed. Off: everything but random and
  /// compute-intensive ops may be.
  bool ban_if_not_in_allowlist = true;
  /// An op whose output is more than 4x smaller than its tensor inputs is saved, not recomputed.
  bool ban_if_reduction = true;
  /// Forward nodes more than this many uses away from the backward (and fewer than 1000) are not
  /// recomputed (config.max_dist_from_bw; 1000 leaves the heuristic off, as PyTorch).
  int64_t max_dist_from_bw = 1000;
  /// Never save a view: recompute it from its base (config.recompute_views).
  bool recompute_views = false;
  /// One flag per primal: inputs that outlive the step (parameters, buffers). With
  /// treat_parameters_as_free_to_save they cost nothing to save. Empty: none are.
  std::vector<bool> static_lifetime_inputs;
  bool treat_parameters_as_free_to_save = true;
  /// Run common subexpression elimination on the joint graph first (config.cse).
  bool cse = true;
  /// Honour MUST_RECOMPUTE / PREFER_RECOMPUTE tags on random ops: a recomputed random op replays
  /// the forward's generator state (functionalize_rng_ops, §13.25), so the backward sees the same
  /// numbers. Off: tagged random ops are saved instead (ban reason "random op").
  bool recompute_random_ops = true;
  /// activation_memory_budget in [0, 1] (§13.40, config.activation_memory_budget): 1 keeps the
  /// runtime-optimized cut; 0 saves only the primals and recomputes everything else, compute-
  /// intensive ops included; in between, a 0/1 knapsack over the banned nodes (memory_budget.h)
  /// chooses which of them to save.
  double activation_memory_budget = 1.0;
  /// How that knapsack is solved (config.activation_memory_budget_solver, default "dp").
  KnapsackSolver memory_budget_solver = KnapsackSolver::kDp;
  /// How the budget prices a plan: by the training step's predicted peak (aotgrad's default), or
  /// by summed saved bytes as PyTorch's choose_saved_values_set (memory_budget.h).
  BudgetPricing budget_pricing = BudgetPricing::kPeak;
  /// The caller keeps each parameter's `.grad` between steps and zeroes it in place (libtorch
  /// 1.13's Optimizer::zero_grad(), PyTorch's zero_grad(set_to_none=False)) instead of dropping
  /// it: CompiledFunction then adds each gradient into `.grad` as soon as the backward makes it
  /// (Note [Gradients accumulated as they are made]), and the predicted peak the budget prices and
  /// the memory schedule lowers holds a gradient only until then (training_step_timeline). The
  /// compiled graphs run either way; only the plan and the order chosen differ. A data-parallel
  /// backward offers no gradient early (its buckets read them): leave it false there, since the
  /// budget prices its plans before the data-parallel stage adds the collectives.
  bool gradients_kept = false;
  /// Below budget 1 (and with max_slowdown): the budget also weighs the lowest-peak plan (and
  /// auto's choice) with values of its backward computed again after the step's peak
  /// (recompute_again.h, Note [Computed again]), one more plan per value, priced with the copied
  /// calls' cost. Off: each forward value is computed at most once, as PyTorch's partitioner.
  bool recompute_again = true;
  /// What a recomputed op costs the budget's knapsacks and plans: FLOPs (the default, PyTorch's
  /// estimate) or seconds from a measured cost profile (cost_model.h).
  CostModel cost_model;
  /// --memory-budget=auto: when at least 0, activation_memory_budget is ignored and the budget
  /// takes the lowest-peak plan whose recompute cost exceeds the runtime-optimized cut's by at
  /// most this fraction of the estimated cost of its whole step (forward and backward).
  double max_slowdown = -1;
};

/// --memory-budget=auto's allowance when --max-slowdown is not given: 10% of the fastest plan's
/// estimated step. At 3% (the default until issue 41) auto kept the GPT demo's attention
/// probabilities at context 256 (0.74x eager's peak); the knapsack that recomputes the attention
/// scores' bmm instead costs about 6% by the FLOPs model and peaks near half of eager's.
inline constexpr double kDefaultMaxSlowdown = 0.1;

/// _size_of: bytes of a value from size hints (4096 elements where a size has none); a symbolic
/// scalar counts 1; a tuple the sum of its tensors.
int64_t value_nbytes(const ValueMeta& m);

/// classify_nodes: what the forward and the backward need, and how far each forward value is from
/// its first backward use. Node sets are indexed by position in the graph (Graph::nodes() order).
struct JointNodeClasses {
  std::vector<const Node*> nodes;  // graph order, output included
  NodeMap<size_t> index;           // position in `nodes`
  std::vector<const Node*> primals, tangents;
  std::vector<bool> required_fw;       // ancestors of the forward outputs, and every primal
  std::vector<bool> required_bw;       // tangents_closure and the gradient outputs themselves
  std::vector<bool> tangents_closure;  // the tangents and everything computed from them
  std::vector<bool> unclaimed;         // neither: forward values only the backward needs
  std::vector<bool> static_lifetime;   // primals marked in MinCutOptions::static_lifetime_inputs
  /// Uses from a forward node to the nearest value outside the forward (0 for non-forward nodes;
  /// 1e9 for the output and for forward values only the forward outputs use).
  std::vector<int64_t> dist_from_bw;
  /// dist_from_bw of values the backward never reaches (PyTorch's int(1e9)).
  static constexpr int64_t kDistNever = 1000000000;
  std::vector<int64_t> fw_order;  // rank among the required_fw nodes, -1 for the others
  size_t num_forward_outputs = 0;
  /// The graph's edges by position, as offsets into flat arrays: node i's node arguments (once per
  /// use, lists flattened) are arg_index[arg_begin[i] .. arg_begin[i + 1]), its users (once per
  /// use, the output included) user_index[user_begin[i] .. user_begin[i + 1]).
  std::vector<uint32_t> arg_begin, arg_index, user_begin, user_index;

  size_t at(const Node* n) const { return index.at(n, "min-cut partition: node position"); }
  std::span<const uint32_t> args_of(size_t i) const {
    return {arg_index.data() + arg_begin[i], arg_begin[i + 1] - arg_begin[i]};
  }
  std::span<const uint32_t> users_of(size_t i) const {
    return {user_index.data() + user_begin[i], user_begin[i + 1] - user_begin[i]};
  }
};

/// Classifies the nodes of `joint` (the graph of `info`, or a CSE'd copy of it with the same
/// placeholders and output structure).
JointNodeClasses classify_joint_nodes(const Graph& joint, const JointGraph& info,
                                      const MinCutOptions& options = {});

/// What one max-flow/min-cut solve decided.
struct MinCutSolution {
  std::vector<const Node*> saved;  // the cut, in graph order (before unused values are dropped)
  /// Nodes the flow network forbids recomputing, with the reason, in graph order.
  std::vector<std::pair<const Node*, std::string>> banned;
  /// Capacity of each node's in->out edge (bytes scaled as in get_node_weight); -1 = infinite.
  NodeMap<int64_t> weight;
  int64_t cut_value = 0;  // sum of the saved nodes' weights
};

/// solve_min_cut: builds the flow network of §13.14 (each node split into in/out, in->out capacity
/// = bytes x 1.1^max(min(dist, 100), 1), doubled when not materialized; source -> banned nodes and
/// primals, required backward nodes -> sink, data edges infinite) and cuts it with Boost.Graph's
/// Boykov-Kolmogorov max-flow. The cut is the one nearest the sink (the nodes that can reach the
/// sink in the residual graph are on the sink side), as networkx.minimum_cut returns it. Nodes in
/// `dont_ban` are not banned (the hook of the activation memory budget). Throws Error naming the
/// nodes when a value the backward needs can be neither saved nor recomputed.
MinCutSolution solve_min_cut(const JointNodeClasses& classes, const MinCutOptions& options,
                             const std::unordered_set<const Node*>& dont_ban = {},
                             const OpClasses& ops = OpClasses::defaults());

/// Why the partition saved and recomputed what it did (`aotgrad compile --explain`).
/// One plan the budget weighed.
struct BudgetPlan {
  /// "runtime optimized", "more aggressive", "aggressive", "recompute norms", "knapsack
  /// <capacity>" or "inputs".
  std::string stage;
  /// Summed bytes of the saved values on the scale of the primals (0) to the runtime-optimized
  /// cut (1), as PyTorch's memory ratio.
  double memory_ratio = 1;
  /// training_step_timeline's peak (re-inplaced, unscheduled) of the plan's partition.
  int64_t peak_bytes = 0;
  /// peak_bytes on the scale of the lowest plan's peak (0; saving only the primals on most
  /// models) to the runtime-optimized cut's (1).
  double peak_ratio = 1;
  /// estimate_runtime summed over the forward calls the backward computes again.
  double recompute_cost = 0;
  /// estimate_runtime summed over every call of the plan's forward and backward.
  double step_cost = 0;
  /// Values the plan's backward computes a second time (MinCutOptions::recompute_again): the
  /// rounds of recompute_again run on the plan `stage` names before its " + again".
  int again_rounds = 0;
};

struct MinCutExplain {
  struct Saved {
    std::string name;
    std::string annotation;  // "f32[4, 16][16, 1]cpu"
    int64_t bytes = 0;       // from size hints (4096 elements where a size has none)
    int64_t weight = 0;      // the capacity the cut paid
    bool is_input = false;   // a primal, or a view of one
    std::string why;         // "primal input", "cannot recompute: <ban reason>", "min cut"
  };
  struct Recomputed {
    std::string name;
    std::string op;  // "aten::relu"
  };
  struct Banned {
    std::string name;
    std::string op;      // "aten::addmm", "placeholder"
    std::string reason;  // "not in recomputable allowlist", "primal input", ...
  };
  std::vector<Saved> saved;            // in the order the forward returns them
  std::vector<Recomputed> recomputed;  // forward ops the backward computes again
  std::vector<Banned> banned;
  int64_t cut_value = 0;
  int64_t saved_bytes = 0;             // sum of saved[i].bytes
  int64_t saved_activation_bytes = 0;  // unique storages of the saved values that are not inputs
  int cse_merged = 0;                  // nodes CSE merged before partitioning
  /// The activation memory budget's decision (memory_budget.h): the budget, which stage gave the
  /// saved set ("runtime optimized", "more aggressive", "aggressive", "recompute norms",
  /// "knapsack", "inputs"), that set's memory ratio between the primals (0) and the
  /// runtime-optimized cut (1), and the banned nodes the knapsack let the backward recompute.
  double memory_budget = 1.0;
  std::string budget_stage = "runtime optimized";
  double memory_ratio = 1.0;
  std::vector<std::string> knapsack_recomputable;
  /// Below budget 1: the plans the budget weighed and the chosen one's index (memory_budget.h).
  std::vector<BudgetPlan> budget_plans;
  size_t budget_chosen = 0;
  /// The values the chosen plan's backward computes again (recompute_again_text), or empty.
  std::string computed_again;
  /// --memory-budget=auto's allowance (MinCutOptions::max_slowdown), below 0 when not automatic.
  double max_slowdown = -1;
};

/// The explanation as text: one line per saved value (name, annotation, bytes, why), per
/// recomputed op and per banned op (name, op, reason), under three headed sections.
std::string explain_text(const MinCutExplain& e);

/// The forward and backward graphs for a chosen saved set: fw computes the forward outputs and the
/// saved values from the primals; bw computes the gradients from the saved values and the
/// tangents. Saved values the backward does not use are dropped; the backward is ordered as the
/// autograd engine would run it (reordering_to_mimic_autograd_engine: each backward op in turn,
/// with only the recomputed forward ops it needs just before it).
Partition partition_with_saved_values(const Graph& joint, const JointNodeClasses& classes,
                                      const std::vector<const Node*>& saved);

/// min_cut_rematerialization_partition: CSE on a copy of the joint graph (options.cse), node
/// classification, the min cut, then partition_with_saved_values. A joint graph whose backward
/// uses no tangent goes to default_partition, as in PyTorch. `explain`, when given, is filled.
/// `then`: the order the pipeline gives the forward and backward graphs after the partition
/// (kMemory: the memory schedule reorders them), which the memory budget prices.
Partition min_cut_partition(const JointGraph& joint, const MinCutOptions& options = {},
                            MinCutExplain* explain = nullptr,
                            ScheduleKind then = ScheduleKind::kMemory);

}  // namespace aotgrad

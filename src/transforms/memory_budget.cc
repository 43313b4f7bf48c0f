// aotgrad: the activation memory budget (choose_saved_values_set).
#include "aotgrad/transforms/memory_budget.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "aotgrad/ir/error.h"
#include "aotgrad/transforms/input_mutations.h"

namespace aotgrad {
namespace {

const TensorMeta* tensor_arg(const Node& n, size_t i) {
  if (i >= n.args().size() || !n.args()[i].is_node()) return nullptr;
  const ValueMeta& m = n.args()[i].node->meta();
  return m.is_tensor() ? &m.tensor : nullptr;
}

double numel(const TensorMeta& t) { return static_cast<double>(t.numel().hint_or(4096)); }

double dim(const TensorMeta& t, size_t d) {
  return d < t.sizes.size() ? static_cast<double>(t.sizes[d].hint_or(4096)) : 1.0;
}

/// Elements of weight per output channel: input channels per group times kernel elements.
double per_output_channel(const TensorMeta& w) {
  double d0 = dim(w, 0);
  return d0 > 0 ? numel(w) / d0 : 0.0;
}

/// 2 * M * K * N of (M x K) @ (K x N), batched by the leading dimensions of `a`.
double matmul_flops(const TensorMeta& a, const TensorMeta& b) {
  if (a.sizes.size() < 2 || b.sizes.empty()) return 0;
  double k = dim(a, a.sizes.size() - 1);
  double rows = numel(a) / std::max(k, 1.0);  // B * M
  double n = dim(b, b.sizes.size() - 1);
  return 2 * rows * k * n;
}

double largest_element_count(const Node& n) {
  double most = 0;
  for (const Arg& a : n.args())
    a.for_each_node([&](Node* m) {
      if (m->meta().is_tensor()) most = std::max(most, numel(m->meta().tensor));
    });
  const ValueMeta& r = n.meta();
  if (r.is_tensor()) most = std::max(most, numel(r.tensor));
  if (r.kind == ValueMeta::Kind::Tuple)
    for (const ValueMeta& e : r.elems)
      if (e.is_tensor()) most = std::max(most, numel(e.tensor));
  return most;
}

double sum_bytes(const std::vector<const Node*>& nodes) {
  double s = 0;
  for (const Node* n : nodes) s += static_cast<double>(value_nbytes(n->meta()));
  return s;
}

// The inputs, and the forward collectives the backward reads -- the last collective of each chain,
// a wait, which no other collective uses: a collective is never recomputed (Note [Functional
// collectives]), so even the smallest choice saves those.
std::vector<const Node*> inputs_and_collectives(const JointNodeClasses& c, const OpClasses& ops) {
  std::vector<const Node*> saved = c.primals;
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const Node& n = *c.nodes[i];
    if (!c.required_fw[i] || c.tangents_closure[i] || !ops.is_collective(n)) continue;
    if (c.dist_from_bw[i] >= JointNodeClasses::kDistNever) continue;
    bool last = true;
    for (uint32_t u : c.users_of(i)) last = last && !ops.is_collective(*c.nodes[u]);
    if (last) saved.push_back(&n);
  }
  return saved;
}

}  // namespace

double estimate_runtime(const Node& n) {
  if (n.kind() != NodeKind::Call) return 1;
  std::string_view p = OpClasses::packet(n);
  double flops = 0;
  if (p == "aten::mm" || p == "aten::bmm") {
    if (auto* a = tensor_arg(n, 0), *b = tensor_arg(n, 1); a && b) flops = matmul_flops(*a, *b);
  } else if (p == "aten::addmm" || p == "aten::baddbmm") {
    if (auto* a = tensor_arg(n, 1), *b = tensor_arg(n, 2); a && b) flops = matmul_flops(*a, *b);
  } else if (p == "aten::convolution") {
    // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups): each
    // output element of a convolution (each input element of a transposed one) takes one
    // multiply-add per weight element of its channel.
    const TensorMeta* x = tensor_arg(n, 0);
    const TensorMeta* w = tensor_arg(n, 1);
    bool transposed = n.args().size() > 6 && n.args()[6].i != 0;
    if (x && w && n.meta().is_tensor())
      flops = 2 * (transposed ? numel(*x) : numel(n.meta().tensor)) * per_output_channel(*w);
  } else if (p == "aten::convolution_backward") {
    // (grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
    // output_padding, groups, output_mask): grad_input and grad_weight each cost one convolution.
    const TensorMeta* gy = tensor_arg(n, 0);
    const TensorMeta* x = tensor_arg(n, 1);
    const TensorMeta* w = tensor_arg(n, 2);
    bool transposed = n.args().size() > 7 && n.args()[7].i != 0;
    if (gy && x && w) {
      double conv = 2 * (transposed ? numel(*x) : numel(*gy)) * per_output_channel(*w);
      int convs = 2;
      if (n.args().size() > 10 && n.args()[10].is_list()) {
        const auto& mask = n.args()[10].list;
        convs = (mask.size() > 0 && mask[0].i != 0) + (mask.size() > 1 && mask[1].i != 0);
      }
      flops = conv * convs;
    }
  } else {
    flops = largest_element_count(n);
  }
  return std::max(flops, 1.0);
}

BudgetChoice choose_saved_values(const JointNodeClasses& c, const MinCutOptions& options,
                                 const OpClasses& ops) {
  const double budget = options.activation_memory_budget;
  if (!(budget >= 0 && budget <= 1)) {
    std::ostringstream os;
    os << "the activation memory budget must be in [0, 1]; got " << budget;
    throw Error(os.str());
  }
  BudgetChoice r;
  if (budget == 0) {
    r.solution.saved = inputs_and_collectives(c, ops);
    r.stage = "inputs";
    r.memory_ratio = 0;
    return r;
  }
  r.solution = solve_min_cut(c, options, {}, ops);
  r.stage = "runtime optimized";
  if (budget == 1) return r;

  const double min_size = sum_bytes(c.primals);
  const double max_size = sum_bytes(r.solution.saved);
  // The runtime-optimized cut saves no more than the inputs would.
  if (max_size <= min_size) return r;
  auto ratio = [&](const std::vector<const Node*>& saved) {
    return (sum_bytes(saved) - min_size) / (max_size - min_size);
  };

  MinCutOptions more = options;
  more.ban_if_used_far_apart = false;
  more.ban_if_long_fusible_chains = false;
  more.ban_if_materialized_backward = false;
  MinCutSolution more_sol = solve_min_cut(c, more, {}, ops);
  if (double m = ratio(more_sol.saved); m < budget) {
    r.solution = std::move(more_sol);
    r.stage = "more aggressive";
    r.memory_ratio = m;
    return r;
  }
  MinCutOptions aggressive = more;
  aggressive.ban_if_not_in_allowlist = false;
  MinCutSolution aggressive_sol = solve_min_cut(c, aggressive, {}, ops);
  if (double m = ratio(aggressive_sol.saved); m < budget) {
    r.solution = std::move(aggressive_sol);
    r.stage = "aggressive";
    r.memory_ratio = m;
    return r;
  }

  // The banned nodes the backward needs (dist_from_bw below "never") that do not live in an
  // input's storage, collectives left out: the knapsack's items, by name, then largest first.
  const Graph& g = *c.nodes.front()->graph();
  std::vector<const Node*> roots = storage_roots(g);
  std::vector<const Node*> items;
  for (const auto& [n, reason] : aggressive_sol.banned) {
    size_t i = c.at(n);
    const Node* root = roots[i];
    bool in_input = root->kind() == NodeKind::Placeholder;
    if (c.dist_from_bw[i] < JointNodeClasses::kDistNever && !in_input && !ops.is_collective(*n))
      items.push_back(n);
  }
  std::sort(items.begin(), items.end(),
            [](const Node* a, const Node* b) { return a->name() < b->name(); });
  std::stable_sort(items.begin(), items.end(), [](const Node* a, const Node* b) {
    return value_nbytes(a->meta()) > value_nbytes(b->meta());
  });
  if (items.empty()) {
    r.solution = MinCutSolution{};
    r.solution.saved = inputs_and_collectives(c, ops);
    r.stage = "inputs";
    r.memory_ratio = 0;
    return r;
  }
  std::vector<double> memory, runtime;
  for (const Node* n : items) {
    memory.push_back(static_cast<double>(value_nbytes(n->meta())) / (max_size - min_size));
    runtime.push_back(estimate_runtime(*n));
  }
  KnapsackResult k = solve_knapsack(options.memory_budget_solver, memory, runtime, budget);
  std::unordered_set<const Node*> dont_ban;
  for (int idx : k.recomputable) {
    dont_ban.insert(items[idx]);
    r.knapsack_recomputable.push_back(items[idx]);
  }
  std::sort(r.knapsack_recomputable.begin(), r.knapsack_recomputable.end(),
            [&](const Node* a, const Node* b) { return c.at(a) < c.at(b); });
  r.solution = solve_min_cut(c, aggressive, dont_ban, ops);
  r.stage = "knapsack";
  r.memory_ratio = ratio(r.solution.saved);
  return r;
}

}  // namespace aotgrad

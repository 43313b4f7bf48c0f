// aotgrad: the min-cut rematerialization partitioner.
#include "aotgrad/transforms/min_cut.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <sstream>
#include <tuple>

// GCC's -Wmaybe-uninitialized misfires inside Boost.Graph's edge iterators (boost::optional).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#pragma GCC diagnostic pop

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/known_ops.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/cse.h"
#include "aotgrad/transforms/dce.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/memory_budget.h"
#include "aotgrad/transforms/rng_functionalize.h"

namespace aotgrad {
namespace {

constexpr int64_t kDistInf = JointNodeClasses::kDistNever;
// Capacities are int64; "infinite" is far above any sum of finite capacities (which are scaled
// down if they ever come near it), so a max flow never overflows.
constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
constexpr int64_t kFiniteBudget = kInf / 4;

void flatten(const Arg& a, std::vector<Arg>& out) {
  if (a.is_list()) {
    for (auto& e : a.list) flatten(e, out);
  } else {
    out.push_back(a);
  }
}

bool is_sym(const ValueMeta& m) {
  return m.kind == ValueMeta::Kind::SymInt || m.kind == ValueMeta::Kind::SymFloat ||
         m.kind == ValueMeta::Kind::SymBool;
}

/// _size_of: bytes of a value from size hints (4096 elements where a size has none); a symbolic
/// scalar counts 1; a tuple the sum of its tensors.
int64_t size_of(const ValueMeta& m) {
  switch (m.kind) {
    case ValueMeta::Kind::Tensor: return m.tensor.nbytes_hint();
    case ValueMeta::Kind::SymInt:
    case ValueMeta::Kind::SymFloat:
    case ValueMeta::Kind::SymBool: return 1;
    case ValueMeta::Kind::Tuple: {
      int64_t s = 0;
      for (const ValueMeta& e : m.elems)
        if (e.is_tensor()) s += e.tensor.nbytes_hint();
      return s;
    }
    case ValueMeta::Kind::None: return 0;
  }
  return 0;
}

bool tagged_recompute(const Node& n) {
  return n.info().recompute == RecomputePolicy::MustRecompute ||
         n.info().recompute == RecomputePolicy::PreferRecompute;
}

/// A directed edge of the flow network.
struct FlowEdge {
  int from, to;
  int64_t cap;  // kInf for infinite
};

/// The flow network's out-edges in compressed rows: vertex v's edges are
/// target[begin[v] .. begin[v + 1]), in the order they were added.
struct FlowRows {
  std::vector<uint32_t> begin, target;
};

/// Rows of the edges `keep(k)` selects among `count` edges whose endpoints `ends(k)` gives,
/// grouped by source by a stable counting sort.
template <typename Ends, typename Keep>
FlowRows flow_rows(size_t num_vertices, size_t count, Ends ends, Keep keep) {
  FlowRows r;
  r.begin.assign(num_vertices + 1, 0);
  for (size_t k = 0; k < count; ++k)
    if (keep(k)) ++r.begin[ends(k).first + 1];
  for (size_t v = 0; v < num_vertices; ++v) r.begin[v + 1] += r.begin[v];
  r.target.resize(r.begin[num_vertices]);
  std::vector<uint32_t> fill(r.begin.begin(), r.begin.end() - 1);
  for (size_t k = 0; k < count; ++k)
    if (keep(k)) {
      auto [from, to] = ends(k);
      r.target[fill[from]++] = to;
    }
  return r;
}

// A compressed-sparse-row graph with its properties in plain arrays indexed by edge: building it
// allocates a few arrays, not one property object per edge as an adjacency_list would.
using FlowGraph =
    boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, boost::no_property,
                                       boost::no_property, uint32_t, uint32_t>;
using FlowEdgeDesc = boost::graph_traits<FlowGraph>::edge_descriptor;

/// Max flow from 0 to 1 over `edges` (no all-infinite path may exist); returns, per vertex,
/// whether it can reach the sink in the residual graph (the sink side of the cut nearest the sink).
std::vector<bool> sink_side_after_max_flow(int num_vertices, const std::vector<FlowEdge>& edges) {
  // Each edge k is followed by its reverse (capacity 0): network edge 2k is k, 2k + 1 its
  // reverse. Grouped by source in that order, each vertex lists its edges in the order they were
  // added, so the search visits them as it would in an adjacency list built edge by edge.
  const size_t n_edges = 2 * edges.size();
  auto ends = [&](size_t k) -> std::pair<uint32_t, uint32_t> {
    const FlowEdge& e = edges[k / 2];
    return k % 2 == 0 ? std::pair<uint32_t, uint32_t>(e.from, e.to)
                      : std::pair<uint32_t, uint32_t>(e.to, e.from);
  };
  std::vector<uint32_t> position(n_edges);  // network edge -> its index in the rows
  std::vector<std::pair<uint32_t, uint32_t>> sorted(n_edges);
  {
    std::vector<uint32_t> fill(static_cast<size_t>(num_vertices) + 1, 0);
    for (size_t k = 0; k < n_edges; ++k) ++fill[ends(k).first + 1];
    for (int v = 0; v < num_vertices; ++v) fill[v + 1] += fill[v];
    for (size_t k = 0; k < n_edges; ++k) {
      uint32_t p = fill[ends(k).first]++;
      position[k] = p;
      sorted[p] = ends(k);
    }
  }
  FlowGraph g(boost::edges_are_sorted, sorted.begin(), sorted.end(),
              static_cast<uint32_t>(num_vertices));
  std::vector<FlowEdgeDesc> desc(n_edges);
  auto edge_index = boost::get(boost::edge_index, g);
  for (auto [e, end] = boost::edges(g); e != end; ++e)
    desc[boost::get(boost::edge_index, g, *e)] = *e;
  std::vector<int64_t> cap(n_edges, 0), res(n_edges, 0);
  std::vector<FlowEdgeDesc> rev(n_edges);
  for (size_t k = 0; k < edges.size(); ++k) {
    uint32_t f = position[2 * k], r = position[2 * k + 1];
    cap[f] = edges[k].cap;
    rev[f] = desc[r];
    rev[r] = desc[f];
  }
  std::vector<FlowEdgeDesc> pred(num_vertices);
  std::vector<boost::default_color_type> color(num_vertices);
  std::vector<int64_t> dist(num_vertices);
  auto vertex_index = boost::get(boost::vertex_index, g);
  boost::boykov_kolmogorov_max_flow(g, boost::make_iterator_property_map(cap.begin(), edge_index),
                                    boost::make_iterator_property_map(res.begin(), edge_index),
                                    boost::make_iterator_property_map(rev.begin(), edge_index),
                                    boost::make_iterator_property_map(pred.begin(), vertex_index),
                                    boost::make_iterator_property_map(color.begin(), vertex_index),
                                    boost::make_iterator_property_map(dist.begin(), vertex_index),
                                    vertex_index, 0, 1);
  // u reaches the sink side through a residual edge u -> w (capacity left: an edge not
  // saturated, or the reverse of one that carries flow); every edge has its reverse, so the edges
  // into w are the reverses of w's own.
  std::vector<bool> side(num_vertices, false);
  std::vector<uint32_t> stack{1};
  side[1] = true;
  while (!stack.empty()) {
    uint32_t w = stack.back();
    stack.pop_back();
    for (auto [e, end] = boost::out_edges(w, g); e != end; ++e) {
      uint32_t u = static_cast<uint32_t>(boost::target(*e, g));
      if (!side[u] &&
          res[boost::get(boost::edge_index, g, rev[boost::get(boost::edge_index, g, *e)])] > 0) {
        side[u] = true;
        stack.push_back(u);
      }
    }
  }
  return side;
}

}  // namespace

int64_t value_nbytes(const ValueMeta& m) { return size_of(m); }

// --- classify_nodes ------------------------------------------------------------------------------

JointNodeClasses classify_joint_nodes(const Graph& joint, const JointGraph& info,
                                      const MinCutOptions& options) {
  JointNodeClasses c;
  c.index.reserve(joint.size());
  c.nodes.reserve(joint.size());
  c.arg_begin.reserve(joint.size() + 1);
  c.arg_begin.push_back(0);
  // One walk over the nodes: positions, kinds, and the edges by position, arguments first (one
  // map lookup per use; arguments come before their users), users as their reverse.
  std::vector<NodeKind> kind;
  kind.reserve(joint.size());
  for (Node* n : joint.nodes()) {
    c.index.emplace(n, c.nodes.size());
    c.nodes.push_back(n);
    kind.push_back(n->kind());
    for (const Arg& a : n->args())
      a.for_each_node([&](Node* m) { c.arg_index.push_back(static_cast<uint32_t>(c.at(m))); });
    c.arg_begin.push_back(static_cast<uint32_t>(c.arg_index.size()));
  }
  const size_t n_nodes = c.nodes.size();
  c.user_begin.assign(n_nodes + 1, 0);
  for (uint32_t a : c.arg_index) ++c.user_begin[a + 1];
  for (size_t i = 0; i < n_nodes; ++i) c.user_begin[i + 1] += c.user_begin[i];
  c.user_index.resize(c.arg_index.size());
  {
    std::vector<uint32_t> fill(c.user_begin.begin(), c.user_begin.end() - 1);
    for (size_t i = 0; i < n_nodes; ++i)
      for (uint32_t a : c.args_of(i)) c.user_index[fill[a]++] = static_cast<uint32_t>(i);
  }

  std::vector<Node*> phs = joint.placeholders();
  AOTGRAD_CHECK(phs.size() == info.num_primals + info.num_tangents,
                "min-cut partition: the joint graph has ", phs.size(), " placeholders, expected ",
                info.num_primals, " primals and ", info.num_tangents, " tangents");
  AOTGRAD_CHECK(joint.output() != nullptr, "min-cut partition: the joint graph has no output");
  c.primals.assign(phs.begin(), phs.begin() + info.num_primals);
  c.tangents.assign(phs.begin() + info.num_primals, phs.end());
  c.num_forward_outputs = info.num_forward_outputs;
  std::vector<Arg> outs;
  flatten(joint.output()->args()[0], outs);
  AOTGRAD_CHECK(outs.size() >= info.num_forward_outputs,
                "min-cut partition: the joint graph returns ", outs.size(),
                " values, fewer than its ", info.num_forward_outputs, " forward outputs");
  auto is_output = [&](size_t i) { return kind[i] == NodeKind::Output; };

  c.tangents_closure.assign(n_nodes, false);
  c.required_bw.assign(n_nodes, false);
  c.required_fw.assign(n_nodes, false);
  c.unclaimed.assign(n_nodes, false);
  c.static_lifetime.assign(n_nodes, false);
  c.dist_from_bw.assign(n_nodes, 0);
  c.fw_order.assign(n_nodes, -1);

  for (const Node* t : c.tangents) c.tangents_closure[c.at(t)] = true;
  for (size_t i = 0; i < n_nodes; ++i) {
    if (!c.tangents_closure[i]) continue;
    for (uint32_t u : c.users_of(i))
      if (!is_output(u)) c.tangents_closure[u] = true;
  }
  c.required_bw = c.tangents_closure;
  for (size_t k = info.num_forward_outputs; k < outs.size(); ++k)
    outs[k].for_each_node([&](Node* m) { c.required_bw[c.at(m)] = true; });

  // The forward-only graph: what the forward outputs need from the primals (and, as fx's dead code
  // elimination keeps impure nodes, random ops computable from the primals).
  std::vector<bool> from_primals(n_nodes, false);
  for (const Node* p : c.primals) from_primals[c.at(p)] = true;
  for (size_t i = 0; i < n_nodes; ++i) {
    NodeKind k = kind[i];
    if (k != NodeKind::Call && k != NodeKind::GetItem) continue;
    bool ok = true;
    for (uint32_t a : c.args_of(i)) ok = ok && from_primals[a];
    from_primals[i] = ok;
  }
  for (size_t k = 0; k < info.num_forward_outputs; ++k)
    outs[k].for_each_node([&](Node* m) {
      AOTGRAD_CHECK(from_primals[c.at(m)], "min-cut partition: forward output ", m->describe(),
                    " depends on a tangent");
      c.required_fw[c.at(m)] = true;
    });
  for (size_t i = 0; i < n_nodes; ++i)
    if (from_primals[i] && kind[i] == NodeKind::Call && is_impure(*c.nodes[i]))
      c.required_fw[i] = true;
  for (size_t i = n_nodes; i-- > 0;) {
    if (!c.required_fw[i]) continue;
    for (uint32_t a : c.args_of(i)) c.required_fw[a] = true;
  }
  for (const Node* p : c.primals) c.required_fw[c.at(p)] = true;

  for (size_t i = 0; i < n_nodes; ++i)
    c.unclaimed[i] = !c.required_fw[i] && !c.required_bw[i] && !is_output(i);
  for (size_t k = 0; k < c.primals.size() && k < options.static_lifetime_inputs.size(); ++k)
    c.static_lifetime[c.at(c.primals[k])] = options.static_lifetime_inputs[k];

  int64_t order = 0;
  for (size_t i = 0; i < n_nodes; ++i)
    if (c.required_fw[i]) c.fw_order[i] = order++;
  for (size_t i = n_nodes; i-- > 0;) {
    if (is_output(i)) {
      c.dist_from_bw[i] = kDistInf;
    } else if (!c.required_fw[i]) {
      c.dist_from_bw[i] = 0;
    } else {
      int64_t d = kDistInf;
      for (uint32_t u : c.users_of(i)) d = std::min(d, c.dist_from_bw[u] + 1);
      c.dist_from_bw[i] = d;
    }
  }
  return c;
}

// --- solve_min_cut -------------------------------------------------------------------------------

MinCutSolution solve_min_cut(const JointNodeClasses& c, const MinCutOptions& options,
                             const std::unordered_set<const Node*>& dont_ban,
                             const OpClasses& ops) {
  const size_t n_nodes = c.nodes.size();
  auto node = [&](size_t i) -> const Node& { return *c.nodes[i]; };
  // Each node's op classes, looked up once per op.
  enum : uint16_t {
    kFusible = 1,
    kView = 2,
    kRandom = 4,
    kRecomputable = 8,
    kIntensive = 16,
    kCat = 32,
    kCollective = 64,
    kPointwise = 128,
    kEffectful = 256,
    kRegather = 512,
    kNorm = 1024
  };
  std::vector<uint16_t> cls(n_nodes, 0);
  {
    std::unordered_map<const OpDef*, uint16_t> by_op;
    for (size_t i = 0; i < n_nodes; ++i) {
      const Node& n = node(i);
      if (n.kind() == NodeKind::GetItem) {
        cls[i] = kFusible | kRecomputable;
        continue;
      }
      if (n.kind() != NodeKind::Call) continue;
      auto [it, fresh] = by_op.emplace(n.op(), 0);
      if (fresh)
        it->second =
            (ops.is_fusible(n) ? kFusible : 0) | (ops.is_view(n) ? kView : 0) |
            (ops.is_random(n) ? kRandom : 0) | (ops.is_recomputable(n) ? kRecomputable : 0) |
            (ops.is_compute_intensive(n) ? kIntensive : 0) |
            (ops::is_call_of_packet(&n, ops::cat()) ? kCat : 0) |
            (ops.is_collective(n) ? kCollective : 0) | (ops.is_pointwise(n) ? kPointwise : 0) |
            (is_effectful(*n.op()) ? kEffectful : 0) | (ops.is_normalization(n) ? kNorm : 0);
      cls[i] = it->second;
      if (OpClasses::is_regather(n)) cls[i] |= kRegather;
    }
  }
  auto has = [&](size_t i, uint16_t f) { return (cls[i] & f) != 0; };
  // Memory fusion into a cat is possible, but a cat is not a producer of a fusion.
  auto is_fusible = [&](size_t a, size_t b) {
    return has(b, kCat) || (has(a, kFusible) && has(b, kFusible));
  };
  auto must_recompute = [&](size_t i) {
    // A collective issued again would be a second all_reduce of the same gradients; a sharded
    // parameter's gather is the exception (Note [Sharded parameters]).
    if (!tagged_recompute(node(i)) || has(i, kEffectful)) return false;
    if (has(i, kCollective) && !has(i, kRegather)) return false;
    return options.recompute_random_ops || !has(i, kRandom);
  };

  std::vector<uint32_t> stack;
  std::vector<uint32_t> seen(n_nodes, 0);
  uint32_t epoch = 0;
  auto is_materialized_backwards = [&](size_t i) {
    if (has(i, kView)) return false;
    ++epoch;
    stack.assign(1, static_cast<uint32_t>(i));
    seen[i] = epoch;
    while (!stack.empty()) {
      uint32_t cur = stack.back();
      stack.pop_back();
      for (uint32_t u : c.users_of(cur)) {
        if (!c.required_fw[u] && !is_fusible(cur, u)) return true;
        if (has(u, kView) && seen[u] != epoch) {
          seen[u] = epoch;
          stack.push_back(u);
        }
      }
    }
    return false;
  };

  // Whether the backward has value i anyway: a primal, or a value that a node outside the forward
  // (a backward op, or a value only the backward needs) uses, directly or through views of it or
  // of its base.
  std::vector<uint32_t> reach_seen(n_nodes, 0);
  uint32_t reach_epoch = 0;
  auto backward_has = [&](size_t i) {
    size_t root = i;
    while (has(root, kView) && !c.args_of(root).empty()) root = c.args_of(root)[0];
    ++reach_epoch;
    stack.assign(1, static_cast<uint32_t>(root));
    reach_seen[root] = reach_epoch;
    while (!stack.empty()) {
      uint32_t cur = stack.back();
      stack.pop_back();
      if (node(cur).kind() == NodeKind::Placeholder && !c.tangents_closure[cur]) return true;
      for (uint32_t u : c.users_of(cur)) {
        if (node(u).kind() == NodeKind::Output) continue;
        if (!c.required_fw[u]) return true;
        if (has(u, kView) && reach_seen[u] != reach_epoch) {
          reach_seen[u] = reach_epoch;
          stack.push_back(u);
        }
      }
    }
    return false;
  };
  // recompute_pointwise_from_saved: a cheap op (of the recomputable allowlist: pointwise ops,
  // casts, cheap reductions such as a squeeze-excitation's mean) with a tensor result that the
  // backward can recompute from values it has anyway through at most kMaxRecomputeChain calls.
  // chain[i] counts the calls between forward value i and such values: 0 when the backward has it,
  // else (for a cheap call) one more than its deepest tensor argument; views and getitems add
  // none; kMaxRecomputeChain + 1 stands for "too deep or not recomputable". above[i] is the count
  // value i would have if the backward did not have it.
  constexpr uint8_t kMaxRecomputeChain = 3, kTooDeep = kMaxRecomputeChain + 1;
  // With recompute_norms_from_saved, a normalization counts as one cheap call (its result is a
  // tuple; its getitems pass its count on).
  std::vector<uint8_t> chain, above;
  const bool norms = options.recompute_pointwise_from_saved && options.recompute_norms_from_saved;
  auto is_norm = [&](size_t i) { return norms && has(i, kNorm); };
  auto cheap = [&](size_t i) {
    return node(i).kind() == NodeKind::Call && (has(i, kRecomputable) || is_norm(i)) &&
           !has(i, kView | kRandom | kCollective | kEffectful);
  };
  if (options.recompute_pointwise_from_saved) {
    chain.assign(n_nodes, kTooDeep);
    above.assign(n_nodes, kTooDeep);
    for (size_t i = 0; i < n_nodes; ++i) {
      if (!c.required_fw[i]) continue;
      const bool getitem = node(i).kind() == NodeKind::GetItem;
      if (!node(i).meta().is_tensor() && !is_norm(i)) continue;
      if (getitem) {
        // A getitem of a call with several results: that call's count.
        above[i] = chain[c.args_of(i)[0]];
      } else if (has(i, kView) || cheap(i)) {
        uint8_t deepest = 0;
        bool any = false;
        for (uint32_t a : c.args_of(i))
          if (node(a).meta().is_tensor()) {
            deepest = std::max(deepest, chain[a]);
            any = true;
          }
        if (any) above[i] = std::min<uint8_t>(kTooDeep, deepest + (has(i, kView) ? 0 : 1));
      }
      chain[i] = node(i).meta().is_tensor() && backward_has(i) ? 0 : above[i];
    }
  }
  auto recomputable_from_saved = [&](size_t i) {
    return options.recompute_pointwise_from_saved && cheap(i) &&
           (node(i).meta().is_tensor() || is_norm(i)) && above[i] <= kMaxRecomputeChain;
  };

  auto should_ban = [&](size_t i) -> const char* {
    const Node& n = node(i);
    if (n.kind() != NodeKind::Call) return nullptr;
    if (n.info().recompute == RecomputePolicy::MustSave) return "marked MUST_SAVE";
    // A collective is communication every rank issues once (§13.9): recomputing it in the
    // backward would issue it again, whatever a checkpoint policy says.
    if (has(i, kCollective)) return "collective";
    // An effectful call (with_effects: a print, a user's effectful op) happens once per call, in
    // program order: recomputing it would repeat the effect in the backward (Note [Effect tokens]).
    if (has(i, kEffectful)) return "effectful";
    // A random op draws new numbers when recomputed (PyTorch bans it as "not in recomputable
    // allowlist"; the more specific reason comes first here, for the same nodes).
    if (has(i, kRandom) && !must_recompute(i)) return "random op";
    if (options.recompute_views && has(i, kView)) return nullptr;
    // PyTorch's should_ban_recomputation never bans these two (a constant lifted into the graph).
    if (ops::is_call_of_packet(&n, ops::lift_fresh_copy()) ||
        ops::is_call_of_packet(&n, ops::lift_fresh()))
      return nullptr;
    if (options.ban_if_not_in_allowlist) {
      if (!has(i, kRecomputable) && !(is_norm(i) && recomputable_from_saved(i)))
        return ops.is_unknown(n) ? "unknown op class" : "not in recomputable allowlist";
    } else if (has(i, kIntensive)) {
      return "compute intensive op";
    }
    if (options.ban_if_materialized_backward && is_materialized_backwards(i) &&
        !recomputable_from_saved(i))
      return "materialized in backward";
    if (c.dist_from_bw[i] < 1000 && c.dist_from_bw[i] > options.max_dist_from_bw)
      return "too far from backward";
    if (options.ban_if_reduction) {
      int64_t inputs = 0;
      for (const Arg& a : n.args())
        if (a.is_node()) inputs += size_of(a.node->meta());
      if (size_of(n.meta()) * 4 < inputs) return "reduction op";
    }
    return nullptr;
  };

  auto is_materialized = [&](size_t i) {
    if (node(i).kind() == NodeKind::Placeholder) return true;
    for (uint32_t u : c.users_of(i))
      if (!is_fusible(i, u)) return true;
    return false;
  };

  // get_node_weight; -1 stands for infinite.
  auto node_weight = [&](size_t i) -> int64_t {
    const Node& n = node(i);
    const ValueMeta& m = n.meta();
    if (is_sym(m)) return m.kind == ValueMeta::Kind::SymFloat ? 4 : 1;
    if (!m.is_tensor()) return -1;  // a tuple or nothing: cannot be saved as one value
    if (options.treat_parameters_as_free_to_save && c.static_lifetime[i]) return 0;
    if (options.recompute_views && has(i, kView)) return -1;
    double scaled = static_cast<double>(size_of(m)) *
                    std::pow(1.1, static_cast<double>(std::max<int64_t>(
                                      std::min<int64_t>(c.dist_from_bw[i], 100), 1)));
    int64_t w = static_cast<int64_t>(std::min(scaled, static_cast<double>(kFiniteBudget)));
    return is_materialized(i) ? w : 2 * w;
  };

  auto in_v = [](size_t i) { return static_cast<int>(2 + 2 * i); };
  auto out_v = [](size_t i) { return static_cast<int>(3 + 2 * i); };
  constexpr int kSource = 0, kSink = 1;

  MinCutSolution sol;
  std::vector<FlowEdge> edges;
  std::vector<int64_t> weight(n_nodes, 0);
  std::vector<bool> has_weight_edge(n_nodes, false);
  std::vector<bool> banned(n_nodes, false);
  std::vector<const char*> ban_reason(n_nodes, nullptr);
  edges.reserve(4 * n_nodes);

  auto ban = [&](size_t i, const char* reason) {
    const Node& n = node(i);
    if (has(i, kView)) return false;
    // The memory budget may let a sharded parameter's gather be issued again (Note [Re-gather or
    // keep]), never another collective.
    if (!dont_ban.empty() && dont_ban.count(&n) && !has(i, kEffectful) &&
        (!has(i, kCollective) || has(i, kRegather)))
      return false;
    if (must_recompute(i)) return false;
    if (n.meta().kind == ValueMeta::Kind::SymFloat) return false;
    if (banned[i]) return true;
    banned[i] = true;
    ban_reason[i] = reason;
    edges.push_back({kSource, in_v(i), kInf});
    return true;
  };

  for (size_t i = 0; i < n_nodes; ++i) {
    const Node& n = node(i);
    if (n.kind() == NodeKind::Output) continue;
    if (c.required_bw[i]) {
      if (c.tangents_closure[i]) {
        edges.push_back({in_v(i), kSink, kInf});  // computed in the backward
        continue;
      }
      edges.push_back({out_v(i), kSink, kInf});  // a gradient output: must be available
    }
    if (must_recompute(i)) {
      edges.push_back({in_v(i), kSink, kInf});  // recomputed, as the checkpoint policy says
      continue;
    }
    bool primal = n.kind() == NodeKind::Placeholder && !c.tangents_closure[i];
    if (primal) ban(i, "primal input");
    if (c.required_fw[i])
      if (const char* reason = should_ban(i)) ban(i, reason);
    int64_t w = node_weight(i);
    weight[i] = w;
    has_weight_edge[i] = true;
    edges.push_back({in_v(i), out_v(i), w < 0 ? kInf : w});
    for (uint32_t u : c.users_of(i))
      if (node(u).kind() != NodeKind::Output) edges.push_back({out_v(i), in_v(u), kInf});
  }

  // Forward nodes in fw_order, for the two fusion heuristics.
  std::vector<size_t> fw_nodes;
  for (size_t i = 0; i < n_nodes; ++i)
    if (c.required_fw[i]) fw_nodes.push_back(i);

  if (options.ban_if_used_far_apart) {
    // A value used by a fusible op after one of its uses that cannot fuse: recomputing that far
    // use would not fuse with the near ones, so it is not recomputed (unless it is a pointwise op
    // recompute_pointwise_from_saved lets the backward recompute from what it has anyway).
    // (fw_order, node, reached through a fusible edge); at a tie the non-fusible entry comes first.
    using Entry = std::tuple<int64_t, size_t, bool>;
    // Entries pushed in the current search, per node: bit 0 through a fusible edge, bit 1 not.
    std::vector<uint32_t> pushed_epoch(n_nodes, 0);
    std::vector<uint8_t> pushed_bits(n_nodes, 0);
    uint32_t search = 0;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    auto first_unfusible = [&](const std::vector<size_t>& starts, int64_t max_range) {
      heap = {};
      ++search;
      auto push = [&](size_t i, bool fusible) {
        uint8_t bit = fusible ? 1 : 2;
        if (pushed_epoch[i] != search) {
          pushed_epoch[i] = search;
          pushed_bits[i] = 0;
        }
        if (pushed_bits[i] & bit) return;
        pushed_bits[i] |= bit;
        heap.push({c.fw_order[i], i, fusible});
      };
      for (size_t s : starts) push(s, true);
      while (!heap.empty()) {
        auto [ord, i, fusible] = heap.top();
        heap.pop();
        if (!fusible) return ord;
        for (uint32_t u : c.users_of(i)) {
          if (!c.required_fw[u] || c.fw_order[u] > max_range) continue;
          push(u, is_fusible(i, u));
        }
      }
      return max_range;
    };
    std::vector<size_t> fw_users;
    for (size_t used : fw_nodes) {
      fw_users.clear();
      int64_t max_order = -1;
      for (uint32_t u : c.users_of(used)) {
        if (!c.required_fw[u]) continue;
        fw_users.push_back(u);
        max_order = std::max(max_order, c.fw_order[u]);
      }
      if (fw_users.empty()) continue;
      int64_t first = first_unfusible(fw_users, max_order);
      for (size_t ui : fw_users)
        if (c.fw_order[ui] > first && is_fusible(used, ui) && !banned[ui] &&
            !recomputable_from_saved(ui))
          ban(ui, "used far apart");
    }
  }

  if (options.ban_if_long_fusible_chains) {
    // A chain of more than 100 fusible forward ops (a residual stream) is cut where it runs alone
    // (not at a value recompute_pointwise_from_saved lets the backward recompute in a few calls
    // from what it has anyway: the chain's recomputation stops there already).
    using Entry = std::pair<int64_t, size_t>;
    std::vector<bool> visited(n_nodes, false);
    for (size_t start : fw_nodes) {
      std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
      heap.push({c.fw_order[start], start});
      int64_t start_order = c.fw_order[start];
      while (!heap.empty()) {
        size_t cur = heap.top().second;
        heap.pop();
        if (visited[cur]) continue;
        visited[cur] = true;
        if (c.fw_order[cur] > start_order + 100 && heap.empty() && !recomputable_from_saved(cur)) {
          ban(cur, "long fusible chain");
          break;
        }
        for (uint32_t u : c.users_of(cur))
          if (c.required_fw[u] && is_fusible(cur, u) && !banned[u]) heap.push({c.fw_order[u], u});
      }
    }
  }

  const int num_vertices = static_cast<int>(2 + 2 * n_nodes);
  // A path of infinite edges from the source to the sink: a value the backward needs that can be
  // neither saved nor recomputed.
  {
    FlowRows inf_out = flow_rows(
        num_vertices, edges.size(),
        [&](size_t k) { return std::pair<uint32_t, uint32_t>(edges[k].from, edges[k].to); },
        [&](size_t k) { return edges[k].cap >= kInf; });
    std::vector<int> parent(num_vertices, -2);
    std::vector<int> queue{kSource};
    parent[kSource] = -1;
    for (size_t head = 0; head < queue.size() && parent[kSink] == -2; ++head) {
      int v = queue[head];
      for (uint32_t k = inf_out.begin[v]; k < inf_out.begin[v + 1]; ++k) {
        int w = static_cast<int>(inf_out.target[k]);
        if (parent[w] == -2) {
          parent[w] = v;
          queue.push_back(w);
        }
      }
    }
    if (parent[kSink] != -2) {
      std::vector<std::string> path;
      for (int v = parent[kSink]; v > kSink; v = parent[v]) {
        const Node& n = node(static_cast<size_t>((v - 2) / 2));
        if (path.empty() || path.back().rfind("'" + n.name() + "'", 0) != 0) {
          std::string what = "'" + n.name() + "'";
          size_t i = c.at(&n);
          if (banned[i])
            what += std::string(" (cannot recompute: ") + ban_reason[i] + ")";
          else if (has_weight_edge[i] && weight[i] < 0)
            what += " (cannot save: " + n.meta().describe() + ")";
          path.push_back(what);
        }
      }
      std::reverse(path.begin(), path.end());
      std::string text;
      for (auto& p : path) text += (text.empty() ? "" : " -> ") + p;
      throw Error(
          "min-cut partition: a value the backward needs can be neither saved nor recomputed: " +
          text);
    }
  }

  // Scale the finite capacities down if their sum could come near "infinite".
  long double total = 0;
  for (const FlowEdge& e : edges)
    if (e.cap < kInf) total += e.cap;
  if (total > static_cast<long double>(kFiniteBudget)) {
    long double f = static_cast<long double>(kFiniteBudget) / total;
    for (FlowEdge& e : edges)
      if (e.cap < kInf) e.cap = static_cast<int64_t>(std::floor(e.cap * f));
  }

  std::vector<bool> sink_side = sink_side_after_max_flow(num_vertices, edges);
  for (size_t i = 0; i < n_nodes; ++i) {
    if (!has_weight_edge[i] || sink_side[in_v(i)] || !sink_side[out_v(i)]) continue;
    sol.saved.push_back(c.nodes[i]);
    sol.cut_value += weight[i] < 0 ? 0 : weight[i];
  }
  sol.weight.reserve(n_nodes);
  for (size_t i = 0; i < n_nodes; ++i) {
    if (banned[i]) sol.banned.push_back({c.nodes[i], ban_reason[i]});
    if (has_weight_edge[i]) sol.weight.emplace(c.nodes[i], weight[i]);
  }
  return sol;
}

// --- extraction ----------------------------------------------------------------------------------

Partition partition_with_saved_values(const Graph& joint, const JointNodeClasses& c,
                                      const std::vector<const Node*>& saved_in) {
  const size_t n_nodes = c.nodes.size();
  std::vector<Arg> outs;
  flatten(joint.output()->args()[0], outs);
  std::vector<Arg> fw_outs(outs.begin(), outs.begin() + c.num_forward_outputs);
  std::vector<Arg> grads(outs.begin() + c.num_forward_outputs, outs.end());

  // Tensors first, then symbolic scalars (save_for_backward takes tensors; PyTorch stashes the
  // SymInts after them).
  std::vector<const Node*> saved;
  for (const Node* s : saved_in)
    if (!is_sym(s->meta())) saved.push_back(s);
  for (const Node* s : saved_in)
    if (is_sym(s->meta())) saved.push_back(s);

  // The backward: what the gradients need, computed from the saved values and the tangents.
  std::vector<bool> bw_input(n_nodes, false), needed_bw(n_nodes, false);
  for (const Node* s : saved) bw_input[c.at(s)] = true;
  for (const Node* t : c.tangents) bw_input[c.at(t)] = true;
  std::vector<bool> used_saved(n_nodes, false);
  for (const Arg& g : grads)
    g.for_each_node([&](Node* m) { needed_bw[c.at(m)] = used_saved[c.at(m)] = true; });
  for (size_t i = n_nodes; i-- > 0;) {
    if (!needed_bw[i] || bw_input[i]) continue;
    const Node* n = c.nodes[i];
    AOTGRAD_CHECK(n->kind() != NodeKind::Placeholder, "min-cut partition: the backward needs ",
                  n->describe(), ", which is neither saved nor a tangent");
    for (uint32_t a : c.args_of(i)) needed_bw[a] = used_saved[a] = true;
  }
  std::vector<const Node*> kept;
  for (const Node* s : saved)
    if (used_saved[c.at(s)]) kept.push_back(s);

  // The forward: the forward outputs and the kept saved values from the primals.
  std::vector<bool> needed_fw(n_nodes, false);
  for (const Arg& o : fw_outs) o.for_each_node([&](Node* m) { needed_fw[c.at(m)] = true; });
  for (const Node* s : kept) needed_fw[c.at(s)] = true;
  // A random op (or another impure one) of the forward runs there even when nothing uses it:
  // dropping it would shift the numbers every later random op draws (fx's is_impure).
  for (size_t i = 0; i < n_nodes; ++i)
    if (c.required_fw[i] && c.nodes[i]->kind() == NodeKind::Call && is_impure(*c.nodes[i]))
      needed_fw[i] = true;
  for (size_t i = n_nodes; i-- > 0;) {
    if (!needed_fw[i]) continue;
    const Node* n = c.nodes[i];
    AOTGRAD_CHECK(n->kind() != NodeKind::Placeholder || i < c.primals.size(),
                  "min-cut partition: the forward needs ", n->describe(),
                  ", which is not a primal");
    for (uint32_t a : c.args_of(i)) needed_fw[a] = true;
  }
  std::vector<const Node*> fw_nodes;
  for (size_t i = 0; i < n_nodes; ++i)
    if (needed_fw[i] && c.nodes[i]->kind() != NodeKind::Placeholder) fw_nodes.push_back(c.nodes[i]);

  // reordering_to_mimic_autograd_engine: from the first op that uses a tangent on, each backward op
  // in turn, preceded by the not-yet-computed ops it needs in graph order; recomputed forward ops
  // thus run just before their first use instead of all at the start.
  std::vector<size_t> bw_nodes;
  for (size_t i = 0; i < n_nodes; ++i)
    if (needed_bw[i] && !bw_input[i]) bw_nodes.push_back(i);
  std::vector<bool> is_tangent(n_nodes, false);
  for (const Node* t : c.tangents) is_tangent[c.at(t)] = true;
  size_t first = bw_nodes.size();
  for (size_t k = 0; k < bw_nodes.size() && first == bw_nodes.size(); ++k)
    for (uint32_t a : c.args_of(bw_nodes[k]))
      if (is_tangent[a]) first = std::min(first, k);
  std::vector<const Node*> bw_order;
  if (first == bw_nodes.size()) {
    for (size_t i : bw_nodes) bw_order.push_back(c.nodes[i]);
  } else {
    std::vector<bool> placed(bw_input);
    auto insert = [&](size_t root) {
      if (placed[root]) return;
      std::vector<size_t> stack{root}, group;
      placed[root] = true;
      while (!stack.empty()) {
        size_t i = stack.back();
        stack.pop_back();
        group.push_back(i);
        for (uint32_t a : c.args_of(i))
          if (!placed[a]) {
            placed[a] = true;
            stack.push_back(a);
          }
      }
      std::sort(group.begin(), group.end());
      for (size_t i : group) bw_order.push_back(c.nodes[i]);
    };
    for (size_t k = first; k < bw_nodes.size(); ++k) insert(bw_nodes[k]);
    for (const Arg& g : grads) g.for_each_node([&](Node* m) { insert(c.at(m)); });
  }

  Partition p;
  p.num_forward_outputs = c.num_forward_outputs;
  std::vector<Arg> fw_result = fw_outs;
  for (const Node* s : kept) {
    fw_result.push_back(Arg(const_cast<Node*>(s)));
    p.saved.push_back(s->name());
  }
  p.fw = extract_subgraph(joint, fw_nodes, c.primals, fw_result, /*list_output=*/false);
  std::vector<const Node*> bw_inputs = kept;
  bw_inputs.insert(bw_inputs.end(), c.tangents.begin(), c.tangents.end());
  p.bw = extract_subgraph(joint, bw_order, bw_inputs, grads, /*list_output=*/true);
  return p;
}

// --- the partitioner -----------------------------------------------------------------------------

namespace {

// Why each value was saved and what the backward recomputes; the bytes come with the saved list
// of the final partition (explain_saved).
void fill_explain(const Graph& joint, const JointNodeClasses& c, const MinCutSolution& sol,
                  const Partition& p, MinCutExplain& e) {
  std::unordered_map<const Node*, std::string> banned;
  for (auto& [n, reason] : sol.banned) {
    banned.emplace(n, reason);
    e.banned.push_back(
        {n->name(),
         n->kind() == NodeKind::Call ? n->op()->name : std::string(OpClasses::packet(*n)), reason});
  }
  for (const std::string& name : p.saved) {
    const Node* n = joint.find(name);
    MinCutExplain::Saved s;
    s.name = name;
    s.annotation = n->meta().annotation();
    const int64_t* w = sol.weight.find(n);
    s.weight = w ? *w : 0;
    auto b = banned.find(n);
    if (b != banned.end())
      s.why = b->second == "primal input" ? "primal input" : "cannot recompute: " + b->second;
    else
      s.why = "min cut";
    e.saved.push_back(std::move(s));
  }
  std::unordered_set<std::string> fw_calls;
  for (const Node* n : p.fw->nodes())
    if (n->kind() == NodeKind::Call) fw_calls.insert(n->name());
  for (const Node* n : p.bw->nodes())
    if (n->kind() == NodeKind::Call && fw_calls.count(n->name()))
      e.recomputed.push_back({n->name(), n->op()->name});
}

// The saved values of the final partition, in its order: the generator states
// functionalize_rng_ops added in their place, and each value's bytes from summarize_saved.
void explain_saved(const std::vector<RngStateSave>& rng, const Partition& p, MinCutExplain& e) {
  std::unordered_map<std::string, MinCutExplain::Saved> by_name;
  for (MinCutExplain::Saved& s : e.saved) by_name.emplace(s.name, std::move(s));
  std::unordered_map<std::string, const RngStateSave*> states;
  for (const RngStateSave& r : rng) states.emplace(r.fw_state, &r);
  SavedSummary summary = summarize_saved(*p.fw, p.saved);
  e.saved.clear();
  for (const SavedValue& v : summary.values) {
    MinCutExplain::Saved s;
    if (auto st = states.find(v.name); st != states.end()) {
      s.name = v.name;
      s.annotation = cpu_rng_state_meta().annotation();
      s.why = "rng state for recomputed " + st->second->name;
    } else {
      s = std::move(by_name.at(v.name));
    }
    s.bytes = v.bytes;
    s.is_input = v.is_input;
    e.saved.push_back(std::move(s));
  }
  e.saved_bytes = summary.bytes;
  e.saved_activation_bytes = summary.activation_bytes;
}

}  // namespace

Partition min_cut_partition(const JointGraph& joint, const MinCutOptions& options,
                            MinCutExplain* explain) {
  // The joint graph without dead code and with common subexpressions merged (fx_graph_cse): a
  // copy when either changes something, else the joint graph itself.
  std::unique_ptr<Graph> cleaned;
  const Graph* g = joint.graph.get();
  int merged = 0;
  if (has_dead_code(*g) || (options.cse && has_common_subexpressions(*g))) {
    cleaned = joint.graph->clone();
    eliminate_dead_code(*cleaned);
    if (options.cse) {
      CommonSubexpressionElimination cse;
      cse.run(*cleaned);
      merged = static_cast<int>(cse.changes());
    }
    g = cleaned.get();
  }
  JointNodeClasses c = classify_joint_nodes(*g, joint, options);
  bool any_bw = std::find(c.required_bw.begin(), c.required_bw.end(), true) != c.required_bw.end();
  if (!any_bw) return default_partition(joint);
  BudgetChoice choice = choose_saved_values(c, options);
  const MinCutSolution& sol = choice.solution;
  Partition p = partition_with_saved_values(*g, c, sol.saved);
  RecomputeAgain again;
  if (choice.again_rounds > 0) {
    // As the budget priced the plan: the same rounds on the same graphs.
    again = recompute_plan_again(p, options, choice.again_rounds);
    AOTGRAD_CHECK(static_cast<int>(again.rounds.size()) == choice.again_rounds,
                  "min-cut partition: the budget's plan computes ", choice.again_rounds,
                  " values again, its partition ", again.rounds.size());
  }
  if (explain) {
    *explain = MinCutExplain{};
    explain->cse_merged = merged;
    explain->cut_value = sol.cut_value;
    explain->memory_budget = options.activation_memory_budget;
    explain->max_slowdown = options.max_slowdown;
    explain->budget_stage = choice.stage;
    explain->memory_ratio = choice.memory_ratio;
    explain->budget_plans = choice.plans;
    explain->budget_chosen = choice.chosen;
    for (const Node* n : choice.knapsack_recomputable)
      explain->knapsack_recomputable.push_back(n->name());
    fill_explain(*g, c, sol, p, *explain);
    explain->computed_again = recompute_again_text(again);
    if (choice.stage.rfind("inputs", 0) == 0)
      for (auto& s : explain->saved) s.why = "memory budget: only inputs are saved";
  }
  // Random ops the backward recomputes replay the forward's generator state (§13.25).
  std::vector<RngStateSave> rng = functionalize_rng_ops(p);
  if (explain) explain_saved(rng, p, *explain);
  return p;
}

std::string explain_text(const MinCutExplain& e) {
  std::ostringstream os;
  os << "saved: " << e.saved.size() << " values, " << e.saved_bytes << " bytes ("
     << e.saved_activation_bytes << " bytes of activations), cut " << e.cut_value << "\n";
  for (const auto& s : e.saved)
    os << "  " << s.name << " " << s.annotation << " " << s.bytes << " bytes"
       << (s.is_input ? " (input)" : "") << ": " << s.why << "\n";
  if (!e.budget_plans.empty() || e.memory_budget < 1) {
    if (e.max_slowdown >= 0)
      os << "memory budget: auto, max slowdown " << e.max_slowdown;
    else
      os << "memory budget: " << e.memory_budget;
    os << " (" << e.budget_stage << ", memory ratio " << e.memory_ratio << ")\n";
    for (const auto& n : e.knapsack_recomputable) os << "  knapsack recomputes " << n << "\n";
    os << "budget plans: " << e.budget_plans.size() << "\n";
    for (size_t i = 0; i < e.budget_plans.size(); ++i) {
      const BudgetPlan& p = e.budget_plans[i];
      os << (i == e.budget_chosen ? "  * " : "    ") << p.stage << ": peak " << p.peak_bytes
         << " bytes (peak ratio " << p.peak_ratio << "), memory ratio " << p.memory_ratio
         << ", recompute cost " << p.recompute_cost << " of step " << p.step_cost << "\n";
    }
  }
  if (!e.computed_again.empty()) {
    os << "computed again:\n";
    std::istringstream lines(e.computed_again);
    for (std::string line; std::getline(lines, line);) os << "  " << line << "\n";
  }
  os << "recomputed: " << e.recomputed.size() << " ops\n";
  for (const auto& r : e.recomputed) os << "  " << r.name << " " << r.op << "\n";
  os << "banned: " << e.banned.size() << " nodes\n";
  for (const auto& b : e.banned) os << "  " << b.name << " " << b.op << ": " << b.reason << "\n";
  return os.str();
}

}  // namespace aotgrad

// aotgrad: solve_min_cut (declared in transforms/partition/min_cut.h), the flow network of the
// min-cut partitioner and its max-flow cut.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
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
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {
namespace {

// Capacities are int64; "infinite" is far above any sum of finite capacities (which are scaled
// down if they ever come near it), so a max flow never overflows.
constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
constexpr int64_t kFiniteBudget = kInf / 4;

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

// --- solve_min_cut -------------------------------------------------------------------------------
//
// solve_min_cut is a sequence of named steps over one MinCutNetwork (solve() runs them in order):
//   1. classify_ops: each node's op classes, looked up once per op;
//   2. measure_recompute_chains: how many cheap calls each forward value is from what the backward
//      has anyway (recompute_pointwise_from_saved);
//   3. add_node_edges: each node's in -> out edge (its weight), its data edges, the sink edges of
//      what the backward needs, the source edges of the primals and of the nodes a reason bans;
//   4. ban_used_far_apart and ban_long_fusible_chains: PyTorch's two fusion heuristics;
//   5. check_no_infinite_path: an error naming the nodes when the backward needs a value that can
//      be neither saved nor recomputed;
//   6. scale_capacities, then the max flow, and read_cut.
// Each step's contract is the comment above it.
namespace {

// The op classes the network asks of one node (get_node_weight, should_ban, the heuristics).
struct NodeTraits {
  bool fusible = false, view = false, random = false, recomputable = false, intensive = false,
       cat = false, collective = false, effectful = false, regather = false, norm = false;
};

class MinCutNetwork {
 public:
  MinCutNetwork(const JointNodeClasses& c, const MinCutOptions& options,
                const std::unordered_set<const Node*>& dont_ban, const OpClasses& ops)
      : c_(c),
        options_(options),
        dont_ban_(dont_ban),
        ops_(ops),
        n_(c.nodes.size()),
        norms_(options.recompute_pointwise_from_saved && options.recompute_norms_from_saved) {}

  MinCutSolution solve() {
    seen_.assign(n_, 0);
    classify_ops();
    measure_recompute_chains();
    add_node_edges();
    for (size_t i = 0; i < n_; ++i)
      if (c_.required_fw[i]) fw_nodes_.push_back(i);
    if (options_.ban_if_used_far_apart) ban_used_far_apart();
    if (options_.ban_if_long_fusible_chains) ban_long_fusible_chains();
    check_no_infinite_path();
    scale_capacities();
    return read_cut(sink_side_after_max_flow(num_vertices(), edges_));
  }

 private:
  static constexpr int kSource = 0, kSink = 1;
  static int in_v(size_t i) { return static_cast<int>(2 + 2 * i); }
  static int out_v(size_t i) { return static_cast<int>(3 + 2 * i); }
  int num_vertices() const { return static_cast<int>(2 + 2 * n_); }
  const Node& node(size_t i) const { return *c_.nodes[i]; }
  const NodeTraits& t(size_t i) const { return traits_[i]; }

  // Step 1. traits_[i] for every node: a getitem is fusible and recomputable; a call has its op's
  // classes (regather per node: it depends on the node's arguments); anything else has none.
  void classify_ops() {
    traits_.assign(n_, NodeTraits{});
    std::unordered_map<const OpDef*, NodeTraits> by_op;
    for (size_t i = 0; i < n_; ++i) {
      const Node& n = node(i);
      if (n.kind() == NodeKind::GetItem) {
        traits_[i].fusible = traits_[i].recomputable = true;
        continue;
      }
      if (n.kind() != NodeKind::Call) continue;
      auto [it, fresh] = by_op.emplace(n.op(), NodeTraits{});
      if (fresh) {
        NodeTraits& k = it->second;
        k.fusible = ops_.is_fusible(n);
        k.view = ops_.is_view(n);
        k.random = ops_.is_random(n);
        k.recomputable = ops_.is_recomputable(n);
        k.intensive = ops_.is_compute_intensive(n);
        k.cat = ops::is_call_of_packet(&n, ops::cat());
        k.collective = ops_.is_collective(n);
        k.effectful = is_effectful(*n.op());
        k.norm = ops_.is_normalization(n);
      }
      traits_[i] = it->second;
      traits_[i].regather = OpClasses::is_regather(n);
    }
  }

  // Memory fusion into a cat is possible, but a cat is not a producer of a fusion.
  bool is_fusible(size_t a, size_t b) const { return t(b).cat || (t(a).fusible && t(b).fusible); }

  // A checkpoint policy's MUST/PREFER_RECOMPUTE, where it may hold. A collective issued again
  // would be a second all_reduce of the same gradients; a sharded parameter's gather is the
  // exception (Note [Sharded parameters]).
  bool must_recompute(size_t i) const {
    if (!tagged_recompute(node(i)) || t(i).effectful) return false;
    if (t(i).collective && !t(i).regather) return false;
    return options_.recompute_random_ops || !t(i).random;
  }

  // Whether a non-view value i reaches, through views, a user that is outside the forward and
  // cannot fuse with it (PyTorch's is_materialized_backwards).
  bool is_materialized_backwards(size_t i) {
    if (t(i).view) return false;
    ++epoch_;
    stack_.assign(1, static_cast<uint32_t>(i));
    seen_[i] = epoch_;
    while (!stack_.empty()) {
      uint32_t cur = stack_.back();
      stack_.pop_back();
      for (uint32_t u : c_.users_of(cur)) {
        if (!c_.required_fw[u] && !is_fusible(cur, u)) return true;
        if (t(u).view && seen_[u] != epoch_) {
          seen_[u] = epoch_;
          stack_.push_back(u);
        }
      }
    }
    return false;
  }

  // Whether the backward has value i anyway: a primal, or a value that a node outside the forward
  // (a backward op, or a value only the backward needs) uses, directly or through views of it or
  // of its base.
  bool backward_has(size_t i) {
    size_t root = i;
    while (t(root).view && !c_.args_of(root).empty()) root = c_.args_of(root)[0];
    ++epoch_;
    stack_.assign(1, static_cast<uint32_t>(root));
    seen_[root] = epoch_;
    while (!stack_.empty()) {
      uint32_t cur = stack_.back();
      stack_.pop_back();
      if (node(cur).kind() == NodeKind::Placeholder && !c_.tangents_closure[cur]) return true;
      for (uint32_t u : c_.users_of(cur)) {
        if (node(u).kind() == NodeKind::Output) continue;
        if (!c_.required_fw[u]) return true;
        if (t(u).view && seen_[u] != epoch_) {
          seen_[u] = epoch_;
          stack_.push_back(u);
        }
      }
    }
    return false;
  }

  // With recompute_norms_from_saved, a normalization counts as one cheap call (its result is a
  // tuple; its getitems pass its count on).
  bool is_norm(size_t i) const { return norms_ && t(i).norm; }
  // A cheap op: of the recomputable allowlist (pointwise ops, casts, cheap reductions such as a
  // squeeze-excitation's mean), and no view, random op, collective or effect.
  bool cheap(size_t i) const {
    return node(i).kind() == NodeKind::Call && (t(i).recomputable || is_norm(i)) && !t(i).view &&
           !t(i).random && !t(i).collective && !t(i).effectful;
  }

  // Step 2 (recompute_pointwise_from_saved only). chain_[i] counts the calls between forward value
  // i and values the backward has anyway: 0 when the backward has it, else (for a cheap call) one
  // more than its deepest tensor argument; views and getitems add none; kTooDeep stands for "more
  // than kMaxRecomputeChain, or not recomputable". above_[i] is the count value i would have if
  // the backward did not have it.
  static constexpr uint8_t kMaxRecomputeChain = 3, kTooDeep = kMaxRecomputeChain + 1;
  void measure_recompute_chains() {
    if (!options_.recompute_pointwise_from_saved) return;
    chain_.assign(n_, kTooDeep);
    above_.assign(n_, kTooDeep);
    for (size_t i = 0; i < n_; ++i) {
      if (!c_.required_fw[i]) continue;
      if (!node(i).meta().is_tensor() && !is_norm(i)) continue;
      if (node(i).kind() == NodeKind::GetItem) {
        // A getitem of a call with several results: that call's count.
        above_[i] = chain_[c_.args_of(i)[0]];
      } else if (t(i).view || cheap(i)) {
        uint8_t deepest = 0;
        bool any = false;
        for (uint32_t a : c_.args_of(i))
          if (node(a).meta().is_tensor()) {
            deepest = std::max(deepest, chain_[a]);
            any = true;
          }
        if (any) above_[i] = std::min<uint8_t>(kTooDeep, deepest + (t(i).view ? 0 : 1));
      }
      chain_[i] = node(i).meta().is_tensor() && backward_has(i) ? 0 : above_[i];
    }
  }

  // Whether the backward can recompute value i from values it has anyway in at most
  // kMaxRecomputeChain cheap calls (step 2's measure).
  bool recomputable_from_saved(size_t i) const {
    return options_.recompute_pointwise_from_saved && cheap(i) &&
           (node(i).meta().is_tensor() || is_norm(i)) && above_[i] <= kMaxRecomputeChain;
  }

  // PyTorch's should_ban_recomputation for a forward node: the reason it may not be recomputed,
  // or null.
  const char* ban_reason_of(size_t i) {
    const Node& n = node(i);
    if (n.kind() != NodeKind::Call) return nullptr;
    if (n.info().recompute == RecomputePolicy::MustSave) return "marked MUST_SAVE";
    // A collective is communication every rank issues once (§13.9): recomputing it in the
    // backward would issue it again, whatever a checkpoint policy says.
    if (t(i).collective) return "collective";
    // An effectful call (with_effects: a print, a user's effectful op) happens once per call, in
    // program order: recomputing it would repeat the effect in the backward (Note [Effect tokens]).
    if (t(i).effectful) return "effectful";
    // A random op draws new numbers when recomputed (PyTorch bans it as "not in recomputable
    // allowlist"; the more specific reason comes first here, for the same nodes).
    if (t(i).random && !must_recompute(i)) return "random op";
    if (options_.recompute_views && t(i).view) return nullptr;
    // PyTorch's should_ban_recomputation never bans these two (a constant lifted into the graph).
    if (ops::is_call_of_packet(&n, ops::lift_fresh_copy()) ||
        ops::is_call_of_packet(&n, ops::lift_fresh()))
      return nullptr;
    if (options_.ban_if_not_in_allowlist) {
      if (!t(i).recomputable && !(is_norm(i) && recomputable_from_saved(i)))
        return ops_.is_unknown(n) ? "unknown op class" : "not in recomputable allowlist";
    } else if (t(i).intensive) {
      return "compute intensive op";
    }
    if (options_.ban_if_materialized_backward && is_materialized_backwards(i) &&
        !recomputable_from_saved(i))
      return "materialized in backward";
    if (c_.dist_from_bw[i] < 1000 && c_.dist_from_bw[i] > options_.max_dist_from_bw)
      return "too far from backward";
    if (options_.ban_if_reduction) {
      int64_t inputs = 0;
      for (const Arg& a : n.args())
        if (a.is_node()) inputs += value_nbytes(a.node->meta());
      if (value_nbytes(n.meta()) * 4 < inputs) return "reduction op";
    }
    return nullptr;
  }

  // A placeholder, or a value one of whose users cannot fuse with it.
  bool is_materialized(size_t i) const {
    if (node(i).kind() == NodeKind::Placeholder) return true;
    for (uint32_t u : c_.users_of(i))
      if (!is_fusible(i, u)) return true;
    return false;
  }

  // PyTorch's get_node_weight: the in -> out capacity of node i; -1 stands for infinite.
  int64_t node_weight(size_t i) const {
    const ValueMeta& m = node(i).meta();
    if (m.is_sym_scalar()) return m.kind == ValueMeta::Kind::SymFloat ? 4 : 1;
    if (!m.is_tensor()) return -1;  // a tuple or nothing: cannot be saved as one value
    if (options_.treat_parameters_as_free_to_save && c_.static_lifetime[i]) return 0;
    if (options_.recompute_views && t(i).view) return -1;
    double scaled = static_cast<double>(value_nbytes(m)) *
                    std::pow(1.1, static_cast<double>(std::max<int64_t>(
                                      std::min<int64_t>(c_.dist_from_bw[i], 100), 1)));
    int64_t w = static_cast<int64_t>(std::min(scaled, static_cast<double>(kFiniteBudget)));
    return is_materialized(i) ? w : 2 * w;
  }

  // Adds source -> in(i) unless node i is a view, in dont_ban (the memory budget may let a
  // sharded parameter's gather be issued again, Note [Re-gather or keep], never another
  // collective), recomputed by a policy, or a SymFloat. Returns whether node i is banned now.
  bool ban(size_t i, const char* reason) {
    const Node& n = node(i);
    if (t(i).view) return false;
    if (!dont_ban_.empty() && dont_ban_.count(&n) && !t(i).effectful &&
        (!t(i).collective || t(i).regather))
      return false;
    if (must_recompute(i)) return false;
    if (n.meta().kind == ValueMeta::Kind::SymFloat) return false;
    if (banned_[i]) return true;
    banned_[i] = true;
    ban_reason_[i] = reason;
    edges_.push_back({kSource, in_v(i), kInf});
    return true;
  }

  // Step 3. Per node but the output: in(i) -> sink when the backward computes it (tangents'
  // closure) or a policy recomputes it, and nothing else; out(i) -> sink when the backward needs
  // it; the bans of primals and of ban_reason_of; in(i) -> out(i) with node_weight (infinite for
  // -1); out(i) -> in(u) infinite for each user u but the output.
  void add_node_edges() {
    edges_.reserve(4 * n_);
    weight_.assign(n_, 0);
    has_weight_edge_.assign(n_, false);
    banned_.assign(n_, false);
    ban_reason_.assign(n_, nullptr);
    for (size_t i = 0; i < n_; ++i) {
      const Node& n = node(i);
      if (n.kind() == NodeKind::Output) continue;
      if (c_.required_bw[i]) {
        if (c_.tangents_closure[i]) {
          edges_.push_back({in_v(i), kSink, kInf});  // computed in the backward
          continue;
        }
        edges_.push_back({out_v(i), kSink, kInf});  // a gradient output: must be available
      }
      if (must_recompute(i)) {
        edges_.push_back({in_v(i), kSink, kInf});  // recomputed, as the checkpoint policy says
        continue;
      }
      if (n.kind() == NodeKind::Placeholder && !c_.tangents_closure[i]) ban(i, "primal input");
      if (c_.required_fw[i])
        if (const char* reason = ban_reason_of(i)) ban(i, reason);
      int64_t w = node_weight(i);
      weight_[i] = w;
      has_weight_edge_[i] = true;
      edges_.push_back({in_v(i), out_v(i), w < 0 ? kInf : w});
      for (uint32_t u : c_.users_of(i))
        if (node(u).kind() != NodeKind::Output) edges_.push_back({out_v(i), in_v(u), kInf});
    }
  }

  // Step 4a. A value used by a fusible op after one of its uses that cannot fuse: recomputing that
  // far use would not fuse with the near ones, so it is not recomputed (unless it is a pointwise
  // op recompute_pointwise_from_saved lets the backward recompute from what it has anyway).
  void ban_used_far_apart() {
    // (fw_order, node, reached through a fusible edge); at a tie the non-fusible entry comes first.
    using Entry = std::tuple<int64_t, size_t, bool>;
    // Entries pushed in the current search, per node: bit 0 through a fusible edge, bit 1 not.
    std::vector<uint32_t> pushed_epoch(n_, 0);
    std::vector<uint8_t> pushed_bits(n_, 0);
    uint32_t search = 0;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    // The fw_order of the first user reached through an edge that cannot fuse, else max_range.
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
        heap.push({c_.fw_order[i], i, fusible});
      };
      for (size_t s : starts) push(s, true);
      while (!heap.empty()) {
        auto [ord, i, fusible] = heap.top();
        heap.pop();
        if (!fusible) return ord;
        for (uint32_t u : c_.users_of(i)) {
          if (!c_.required_fw[u] || c_.fw_order[u] > max_range) continue;
          push(u, is_fusible(i, u));
        }
      }
      return max_range;
    };
    std::vector<size_t> fw_users;
    for (size_t used : fw_nodes_) {
      fw_users.clear();
      int64_t max_order = -1;
      for (uint32_t u : c_.users_of(used)) {
        if (!c_.required_fw[u]) continue;
        fw_users.push_back(u);
        max_order = std::max(max_order, c_.fw_order[u]);
      }
      if (fw_users.empty()) continue;
      int64_t first = first_unfusible(fw_users, max_order);
      for (size_t ui : fw_users)
        if (c_.fw_order[ui] > first && is_fusible(used, ui) && !banned_[ui] &&
            !recomputable_from_saved(ui))
          ban(ui, "used far apart");
    }
  }

  // Step 4b. A chain of more than 100 fusible forward ops (a residual stream) is cut where it runs
  // alone (not at a value recompute_pointwise_from_saved lets the backward recompute in a few
  // calls from what it has anyway: the chain's recomputation stops there already).
  void ban_long_fusible_chains() {
    using Entry = std::pair<int64_t, size_t>;
    std::vector<bool> visited(n_, false);
    for (size_t start : fw_nodes_) {
      std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
      heap.push({c_.fw_order[start], start});
      int64_t start_order = c_.fw_order[start];
      while (!heap.empty()) {
        size_t cur = heap.top().second;
        heap.pop();
        if (visited[cur]) continue;
        visited[cur] = true;
        if (c_.fw_order[cur] > start_order + 100 && heap.empty() && !recomputable_from_saved(cur)) {
          ban(cur, "long fusible chain");
          break;
        }
        for (uint32_t u : c_.users_of(cur))
          if (c_.required_fw[u] && is_fusible(cur, u) && !banned_[u])
            heap.push({c_.fw_order[u], u});
      }
    }
  }

  // Step 5. A path of infinite edges from the source to the sink is a value the backward needs
  // that can be neither saved nor recomputed: throws Error naming the path's nodes, each with why
  // it can be neither.
  void check_no_infinite_path() const {
    const int nv = num_vertices();
    FlowRows inf_out = flow_rows(
        nv, edges_.size(),
        [&](size_t k) { return std::pair<uint32_t, uint32_t>(edges_[k].from, edges_[k].to); },
        [&](size_t k) { return edges_[k].cap >= kInf; });
    std::vector<int> parent(nv, -2);
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
    if (parent[kSink] == -2) return;
    std::vector<std::string> path;
    for (int v = parent[kSink]; v > kSink; v = parent[v]) {
      const Node& n = node(static_cast<size_t>((v - 2) / 2));
      if (path.empty() || path.back().rfind("'" + n.name() + "'", 0) != 0) {
        std::string what = "'" + n.name() + "'";
        size_t i = c_.at(&n);
        if (banned_[i])
          what += std::string(" (cannot recompute: ") + ban_reason_[i] + ")";
        else if (has_weight_edge_[i] && weight_[i] < 0)
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

  // Step 6a. The finite capacities, scaled down if their sum could come near "infinite".
  void scale_capacities() {
    long double total = 0;
    for (const FlowEdge& e : edges_)
      if (e.cap < kInf) total += e.cap;
    if (total <= static_cast<long double>(kFiniteBudget)) return;
    long double f = static_cast<long double>(kFiniteBudget) / total;
    for (FlowEdge& e : edges_)
      if (e.cap < kInf) e.cap = static_cast<int64_t>(std::floor(e.cap * f));
  }

  // Step 6b. The saved values are the nodes whose in -> out edge the cut nearest the sink crosses
  // (in(i) on the source side, out(i) on the sink side), in graph order; the cut value sums their
  // weights; the bans and weights are reported as they are.
  MinCutSolution read_cut(const std::vector<bool>& sink_side) const {
    MinCutSolution sol;
    for (size_t i = 0; i < n_; ++i) {
      if (!has_weight_edge_[i] || sink_side[in_v(i)] || !sink_side[out_v(i)]) continue;
      sol.saved.push_back(c_.nodes[i]);
      sol.cut_value += weight_[i] < 0 ? 0 : weight_[i];
    }
    sol.weight.reserve(n_);
    for (size_t i = 0; i < n_; ++i) {
      if (banned_[i]) sol.banned.push_back({c_.nodes[i], ban_reason_[i]});
      if (has_weight_edge_[i]) sol.weight.emplace(c_.nodes[i], weight_[i]);
    }
    return sol;
  }

  const JointNodeClasses& c_;
  const MinCutOptions& options_;
  const std::unordered_set<const Node*>& dont_ban_;
  const OpClasses& ops_;
  const size_t n_;
  const bool norms_;
  std::vector<NodeTraits> traits_;
  std::vector<uint8_t> chain_, above_;
  // Scratch of the view walks (is_materialized_backwards, backward_has): a node is seen in the
  // current walk when seen_[node] == epoch_.
  std::vector<uint32_t> stack_, seen_;
  uint32_t epoch_ = 0;
  std::vector<FlowEdge> edges_;
  std::vector<int64_t> weight_;
  std::vector<bool> has_weight_edge_, banned_;
  std::vector<const char*> ban_reason_;
  std::vector<size_t> fw_nodes_;  // the forward's nodes, in graph order
};

}  // namespace

MinCutSolution solve_min_cut(const JointNodeClasses& c, const MinCutOptions& options,
                             const std::unordered_set<const Node*>& dont_ban,
                             const OpClasses& ops) {
  return MinCutNetwork(c, options, dont_ban, ops).solve();
}

}  // namespace aotgrad

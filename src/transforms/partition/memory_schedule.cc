// aotgrad: memory-aware scheduling of a partition's forward and backward graphs.
#include "aotgrad/transforms/partition/memory_schedule.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/node_map.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/op_classes.h"
#include "aotgrad/transforms/partition/memory_timeline.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/partition/split_weight_grads.h"
#include "aotgrad/transforms/passes/dce.h"
#include "aotgrad/transforms/passes/pass.h"

namespace aotgrad {
namespace {

// One graph's calls and getitems (the "body", in graph order) with what the list scheduler needs:
// dependences, barriers and, as a priority only, the bytes each node allocates and frees. The
// peak that decides is the memory timeline's, not this.
struct Body {
  std::vector<const Node*> nodes;          // graph order, placeholders and output excluded
  NodeMap<size_t> index;                   // position in `nodes`
  std::vector<std::vector<size_t>> preds;  // body nodes each node waits for
  std::vector<std::vector<size_t>> succs;
  std::vector<std::vector<size_t>> getitems;  // a call's getitems, in graph order
  std::vector<bool> barrier;                  // writes an argument, or a collective
  // Storages (a fresh value and its views): bytes, whether the step holds them past the graph
  // (outputs, inputs), uses left.
  std::vector<int> storage;  // per node, -1 for a view of an input or a tangent
  std::vector<int64_t> alloc;
  std::vector<int64_t> storage_bytes;
  std::vector<bool> held;
  std::vector<int64_t> uses;
  std::vector<std::vector<std::pair<int, int64_t>>> arg_uses;  // per node: (storage, count)
};

// A sharded parameter's gather is no barrier: it moves to where the parameter is used, so that
// the gathered parameters do not all live at once (FSDP's per-layer all-gather).
bool is_barrier(const Node& n) {
  return n.kind() == NodeKind::Call &&
         (has_mutations(n) || (is_collective(*n.op()) && !OpClasses::is_regather(n)));
}

// Random calls keep their order (the generator's stream), effectful calls theirs (the program's;
// their token chain says so too), gathers of sharded parameters theirs (every rank's order).
bool is_ordered(const Node& n) {
  return n.kind() == NodeKind::Call &&
         (is_random(*n.op()) || is_effectful(*n.op()) || OpClasses::is_regather(n));
}

// `placeholder_storage`: for each placeholder (in order), a storage key (-1: an input, not
// freeable) and its bytes; equal keys share one storage. `outputs_freed_early`: the graph's
// outputs that no call reads are handed over (and freed) when made, not held past the graph.
Body analyze(const Graph& g, const std::vector<std::pair<int, int64_t>>& placeholder_storage,
             bool outputs_freed_early = false) {
  Body b;
  std::vector<const Node*> roots = storage_roots(g);
  NodeMap<int> storage_of_root(g.size());
  b.index.reserve(g.size());
  std::unordered_map<int, int> storage_of_key;
  std::vector<Node*> placeholders = g.placeholders();
  auto new_storage = [&](int64_t bytes, bool held) {
    b.storage_bytes.push_back(bytes);
    b.held.push_back(held);
    b.uses.push_back(0);
    return static_cast<int>(b.storage_bytes.size()) - 1;
  };
  for (size_t k = 0; k < placeholders.size(); ++k) {
    auto [key, bytes] = placeholder_storage.at(k);
    int s = -1;
    if (key >= 0) {
      auto [it, fresh] = storage_of_key.emplace(key, 0);
      if (fresh) it->second = new_storage(bytes, false);
      s = it->second;
    }
    storage_of_root.emplace(placeholders[k], s);
  }
  size_t pos = 0;
  for (const Node* n : g.nodes()) {
    const Node* root = roots[pos++];
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output) continue;
    size_t i = b.nodes.size();
    b.nodes.push_back(n);
    b.index.emplace(n, i);
    int s = -1;
    int64_t alloc = 0;
    if (root == n) {
      int64_t bytes = 0;
      if (n->meta().is_tensor()) {
        bytes = value_nbytes(n->meta());
      } else if (n->meta().kind == ValueMeta::Kind::Tuple) {
        // The elements no getitem reads; the others are the getitems' own storages.
        std::vector<bool> read(n->meta().elems.size());
        for (const Node* u : n->users())
          if (u->kind() == NodeKind::GetItem && u->getitem_index() >= 0 &&
              static_cast<size_t>(u->getitem_index()) < read.size())
            read[u->getitem_index()] = true;
        for (size_t k = 0; k < read.size(); ++k)
          if (!read[k] && n->meta().elems[k].is_tensor()) bytes += value_nbytes(n->meta().elems[k]);
      }
      s = new_storage(bytes, false);
      storage_of_root.emplace(n, s);
      // A call allocates all its results; a getitem's element came with its call.
      if (n->kind() == NodeKind::Call) alloc = value_nbytes(n->meta());
    } else {
      const int* root_storage = storage_of_root.find(root);
      s = root_storage ? *root_storage : -1;
    }
    b.storage.push_back(s);
    b.alloc.push_back(alloc);
  }
  size_t m = b.nodes.size();
  b.preds.resize(m);
  b.succs.resize(m);
  b.getitems.resize(m);
  b.barrier.resize(m);
  b.arg_uses.resize(m);
  auto storage_of_node = [&](const Node* v) -> int {
    if (const size_t* i = b.index.find(v)) return b.storage[*i];
    const int* root_storage = storage_of_root.find(v);
    return root_storage ? *root_storage : -1;
  };
  size_t last_ordered = SIZE_MAX;
  for (size_t i = 0; i < m; ++i) {
    const Node* n = b.nodes[i];
    b.barrier[i] = is_barrier(*n);
    std::vector<std::pair<int, int64_t>> counts;  // (storage, uses): a call has few arguments
    auto use = [&](Node* a) {
      if (const size_t* p = b.index.find(a)) b.preds[i].push_back(*p);
      int s = storage_of_node(a);
      if (s < 0) return;
      auto c =
          std::find_if(counts.begin(), counts.end(), [&](const auto& e) { return e.first == s; });
      if (c == counts.end())
        counts.push_back({s, 1});
      else
        ++c->second;
    };
    if (n->kind() == NodeKind::GetItem) {
      use(n->getitem_input());
      if (const size_t* p = b.index.find(n->getitem_input())) b.getitems[*p].push_back(i);
    } else {
      for (const Arg& a : n->args()) a.for_each_node(use);
    }
    if (is_ordered(*n)) {
      if (last_ordered != SIZE_MAX) b.preds[i].push_back(last_ordered);
      last_ordered = i;
    }
    std::sort(b.preds[i].begin(), b.preds[i].end());
    b.preds[i].erase(std::unique(b.preds[i].begin(), b.preds[i].end()), b.preds[i].end());
    for (size_t p : b.preds[i]) b.succs[p].push_back(i);
    for (auto [s, c] : counts) {
      b.arg_uses[i].push_back({s, c});
      b.uses[s] += c;
    }
    std::sort(b.arg_uses[i].begin(), b.arg_uses[i].end());
  }
  // What the output returns is held past the graph.
  if (g.output())
    for (const Arg& a : g.output()->args())
      a.for_each_node([&](Node* v) {
        if (outputs_freed_early &&
            std::all_of(v->users().begin(), v->users().end(),
                        [](const Node* u) { return u->kind() == NodeKind::Output; }))
          return;
        int s = storage_of_node(v);
        if (s >= 0) b.held[s] = true;
      });
  return b;
}

// The segments the barriers cut the body into: each barrier alone, the runs between them.
std::vector<std::pair<size_t, size_t>> segments(const Body& b) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t start = 0;
  for (size_t i = 0; i < b.nodes.size(); ++i) {
    if (!b.barrier[i]) continue;
    if (start < i) out.push_back({start, i});
    out.push_back({i, i + 1});
    start = i + 1;
  }
  if (start < b.nodes.size()) out.push_back({start, b.nodes.size()});
  return out;
}

// Greedy list schedule: among the ready nodes of each segment, the one with the most bytes freed
// net of bytes allocated; ties in graph order. A call's getitems follow it at once.
std::vector<size_t> greedy_order(const Body& b) {
  std::vector<size_t> order;
  order.reserve(b.nodes.size());
  std::vector<int64_t> uses = b.uses;
  std::vector<size_t> waiting(b.nodes.size());
  std::vector<bool> done(b.nodes.size());
  for (auto [lo, hi] : segments(b)) {
    std::vector<size_t> ready;
    for (size_t i = lo; i < hi; ++i) {
      for (size_t p : b.preds[i])
        if (p >= lo && !done[p]) ++waiting[i];
      if (waiting[i] == 0) ready.push_back(i);
    }
    auto score = [&](size_t i) -> int64_t {
      // A getitem of a barrier's results (the one case where it does not follow its call at once).
      if (b.nodes[i]->kind() == NodeKind::GetItem) return INT64_MAX;
      int64_t freed = 0;
      for (auto [s, c] : b.arg_uses[i])
        if (!b.held[s] && uses[s] == c) freed += b.storage_bytes[s];
      int s = b.storage[i];
      if (s >= 0 && b.alloc[i] > 0 && !b.held[s] && uses[s] == 0) freed += b.storage_bytes[s];
      return freed - b.alloc[i];
    };
    // `hi = hi`: clang before 16 cannot capture a structured binding (the fuzz build's clang 14).
    std::function<void(size_t)> emit = [&, hi = hi](size_t i) {
      done[i] = true;
      order.push_back(i);
      for (auto [s, c] : b.arg_uses[i]) uses[s] -= c;
      for (size_t u : b.succs[i])
        if (u < hi && --waiting[u] == 0) ready.push_back(u);
      for (size_t gi : b.getitems[i]) {
        if (gi >= hi || done[gi] || waiting[gi] != 0) continue;
        ready.erase(std::find(ready.begin(), ready.end(), gi));
        emit(gi);
      }
    };
    while (!ready.empty()) {
      size_t best = 0;
      int64_t best_score = 0;
      for (size_t k = 0; k < ready.size(); ++k) {
        int64_t sc = score(ready[k]);
        if (k == 0 || sc > best_score || (sc == best_score && ready[k] < ready[best])) {
          best = k;
          best_score = sc;
        }
      }
      size_t i = ready[best];
      ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(best));
      emit(i);
    }
  }
  AOTGRAD_CHECK(order.size() == b.nodes.size(), "memory schedule: ", b.nodes.size() - order.size(),
                " nodes were never ready (a cycle?)");
  return order;
}

// Depth-first from each segment's sinks (nodes no later node of the segment waits for), in graph
// order: every node runs right before the first node that needs it. A call's getitems follow it.
std::vector<size_t> depth_first_order(const Body& b) {
  std::vector<size_t> order;
  order.reserve(b.nodes.size());
  std::vector<bool> done(b.nodes.size());
  for (auto [lo, hi] : segments(b)) {
    std::function<void(size_t)> emit = [&, hi = hi](size_t i) {
      done[i] = true;
      order.push_back(i);
      for (size_t gi : b.getitems[i])
        if (gi < hi && !done[gi]) emit(gi);
    };
    // The getitems of a barrier before it: at once.
    for (size_t i = lo; i < hi; ++i)
      if (b.nodes[i]->kind() == NodeKind::GetItem && b.preds[i].size() == 1 && b.preds[i][0] < lo)
        emit(i);
    for (size_t root = lo; root < hi; ++root) {
      bool sink = true;
      for (size_t u : b.succs[root]) sink = sink && u >= hi;
      if (!sink || done[root]) continue;
      // Iterative post-order over the predecessors in the segment.
      std::vector<std::pair<size_t, size_t>> stack = {{root, 0}};
      while (!stack.empty()) {
        auto& [i, next] = stack.back();
        if (done[i]) {
          stack.pop_back();
          continue;
        }
        if (next < b.preds[i].size()) {
          size_t p = b.preds[i][next++];
          if (p >= lo && !done[p]) stack.push_back({p, 0});
          continue;
        }
        size_t n = i;
        stack.pop_back();
        emit(n);
      }
    }
  }
  AOTGRAD_CHECK(order.size() == b.nodes.size(), "memory schedule: ", b.nodes.size() - order.size(),
                " nodes were not reached from a sink");
  return order;
}

// The body's nodes in `order` (positions in b.nodes).
std::vector<const Node*> in_order(const Body& b, const std::vector<size_t>& order) {
  std::vector<const Node*> body;
  body.reserve(order.size());
  for (size_t i : order) body.push_back(b.nodes[i]);
  return body;
}

bool is_identity(const std::vector<size_t>& order) {
  for (size_t k = 0; k < order.size(); ++k)
    if (order[k] != k) return false;
  return true;
}

struct Candidate {
  const char* name;
  std::vector<size_t> order;
};

}  // namespace

const char* schedule_kind_name(ScheduleKind kind) {
  return kind == ScheduleKind::kMemory ? "memory" : "none";
}

ScheduleKind parse_schedule_kind(std::string_view name) {
  if (name == "memory") return ScheduleKind::kMemory;
  if (name == "none") return ScheduleKind::kNone;
  throw Error("unknown schedule '" + std::string(name) + "' (known: memory, none)");
}

namespace {

// The schedule, in place: `bw` and, given `reorder_fw` (which is `fw`), the forward are
// reordered. `split_bw` gets the backward with its weight gradients split off, reordered, when
// that order wins: the caller puts it in place of `bw`. Each candidate order is priced on the
// graph itself, relinked (Graph::reorder), not on a copy.
MemorySchedule schedule(const Graph& fw, Graph& bw, const std::vector<std::string>& saved,
                        bool gradients_kept, Graph* reorder_fw, std::unique_ptr<Graph>& split_bw) {
  const bool forward = reorder_fw != nullptr;
  MemorySchedule r;
  // Kept gradients leave as they are made only from a backward that offers its outputs early
  // (splitting its weight gradients keeps that so).
  gradients_kept = gradients_kept && offers_outputs_early(bw);
  auto timeline = [&](const Graph& f, const Graph& b) {
    return training_step_timeline(f, b, saved, /*reinplace=*/true, gradients_kept);
  };
  MemoryTimeline before = timeline(fw, bw);
  r.peak_before = before.peak_bytes;
  r.forward_peak_before = phase_peak(before, false);
  r.backward_peak_before = phase_peak(before, true);

  // The forward's placeholders are inputs. The backward's saved placeholders continue the
  // forward's storages (a view and its base share one); its tangents are inputs.
  std::vector<std::pair<int, int64_t>> fw_inputs(fw.placeholders().size(), {-1, 0});
  std::unordered_map<std::string, int> fw_position;
  std::vector<const Node*> fw_roots = storage_roots(fw);
  std::unordered_map<const Node*, int> fw_root_position;
  {
    int k = 0;
    for (const Node* n : fw.nodes()) fw_position[n->name()] = k++;
  }
  std::unordered_map<std::string, bool> is_saved;
  for (const std::string& s : saved) is_saved[s] = true;
  std::vector<std::pair<int, int64_t>> bw_inputs;
  for (const Node* p : bw.placeholders()) {
    std::pair<int, int64_t> st = {-1, 0};
    if (is_saved.count(p->name())) {
      auto it = fw_position.find(p->name());
      AOTGRAD_CHECK(it != fw_position.end(), "memory schedule: saved value '", p->name(),
                    "' is not a node of the forward graph");
      const Node* root = fw_roots[it->second];
      if (root->kind() != NodeKind::Placeholder) {
        auto [rt, fresh] =
            fw_root_position.emplace(root, static_cast<int>(fw_root_position.size()));
        st = {rt->second,
              root->meta().is_tensor() ? value_nbytes(root->meta()) : value_nbytes(p->meta())};
      }
    }
    bw_inputs.push_back(st);
  }

  Body fb = forward ? analyze(fw, fw_inputs) : Body{};
  Body bb = analyze(bw, bw_inputs, gradients_kept);
  // `prefix` names the candidates of a rewritten graph ("split_"). The best order found that is
  // better than `peak_after` goes to `best` (and true is returned); `g` is left in its order.
  auto best_of = [&](Graph& g, const Body& b, bool backward, const std::string& prefix, bool greedy,
                     bool depth_first, int64_t& peak_after, std::string& chosen,
                     std::vector<const Node*>& best) {
    std::vector<Candidate> candidates;
    if (greedy) candidates.push_back({"greedy", greedy_order(b)});
    if (depth_first) candidates.push_back({"depth_first", depth_first_order(b)});
    bool found = false;
    for (Candidate& c : candidates) {
      if (is_identity(c.order)) continue;
      std::vector<const Node*> order = in_order(b, c.order);
      g.reorder(order);
      MemoryTimeline t = backward ? timeline(fw, g) : timeline(g, bw);
      g.reorder(b.nodes);
      int64_t peak = phase_peak(t, backward);
      if (peak < peak_after) {
        peak_after = peak;
        chosen = prefix + c.name;
        best = std::move(order);
        found = true;
      }
    }
    return found;
  };
  r.forward_peak_after = r.forward_peak_before;
  r.backward_peak_after = r.backward_peak_before;
  std::vector<const Node*> fw_order, bw_order;
  if (forward)
    best_of(*reorder_fw, fb, false, "", true, true, r.forward_peak_after, r.forward_order,
            fw_order);
  // A backward with weight gradients to split: its greedy order on the graph with them split off
  // (split_weight_gradients), which has every order of the unsplit graph and more, in place of
  // the unsplit greedy order (two candidates, as for the forward: the schedule is the pipeline's
  // costliest stage); the depth-first order on the unsplit graph.
  std::unique_ptr<Graph> split = has_weight_gradients_to_split(bw) ? bw.clone() : nullptr;
  int calls = split ? split_weight_gradients(*split) : 0;
  std::vector<const Node*> split_order;
  if (calls > 0) {
    Body sb = analyze(*split, bw_inputs, gradients_kept);
    best_of(*split, sb, true, "split_", true, false, r.backward_peak_after, r.backward_order,
            split_order);
  }
  if (best_of(bw, bb, true, "", calls == 0, true, r.backward_peak_after, r.backward_order,
              bw_order))
    split_order.clear();
  if (r.backward_order == "split_greedy") r.split_calls = calls;
  // The candidates were each priced against the other graph's order as given; the winners go in
  // place now.
  if (!fw_order.empty()) reorder_fw->reorder(fw_order);
  if (!bw_order.empty()) bw.reorder(bw_order);
  if (!split_order.empty()) {
    split->reorder(split_order);
    split_bw = std::move(split);
  }
  r.peak_after = std::max(r.forward_peak_after, r.backward_peak_after);
  return r;
}

}  // namespace

MemorySchedule schedule_for_memory(Graph& fw, Graph& bw, const std::vector<std::string>& saved,
                                   bool gradients_kept) {
  std::unique_ptr<Graph> split;
  MemorySchedule r = schedule(fw, bw, saved, gradients_kept, &fw, split);
  if (split) assign_graph(bw, *split);
  return r;
}

MemorySchedule schedule_for_memory(std::unique_ptr<Graph>& fw, std::unique_ptr<Graph>& bw,
                                   const std::vector<std::string>& saved, bool gradients_kept) {
  std::unique_ptr<Graph> split;
  MemorySchedule r = schedule(*fw, *bw, saved, gradients_kept, fw.get(), split);
  if (split) bw = std::move(split);
  return r;
}

MemorySchedule schedule_backward_for_memory(const Graph& fw, std::unique_ptr<Graph>& bw,
                                            const std::vector<std::string>& saved,
                                            bool gradients_kept) {
  std::unique_ptr<Graph> split;
  MemorySchedule r = schedule(fw, *bw, saved, gradients_kept, nullptr, split);
  if (split) bw = std::move(split);
  return r;
}

std::string schedule_text(const MemorySchedule& s) {
  return "forward peak " + std::to_string(s.forward_peak_before) + " -> " +
         std::to_string(s.forward_peak_after) + " bytes (" + s.forward_order + "), backward peak " +
         std::to_string(s.backward_peak_before) + " -> " + std::to_string(s.backward_peak_after) +
         " bytes (" + s.backward_order + "), step peak " + std::to_string(s.peak_before) + " -> " +
         std::to_string(s.peak_after) + " bytes" +
         (s.split_calls > 0 ? ", " + std::to_string(s.split_calls) + " weight gradients split"
                            : "");
}

}  // namespace aotgrad

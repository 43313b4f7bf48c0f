// aotgrad: data-parallel gradient buckets in the backward graph.
//
// Note [Gradient buckets]
// DDP's Reducer packs parameters' gradients into buckets (25 MiB, the first 1 MiB so that
// communication starts early), all-reduces each bucket as soon as its last gradient is ready and
// waits for all of them before the optimizer step. With the whole backward as one graph the ready
// order is the graph's node order, so the buckets are made in that order (DDP rebuilds its buckets
// in the observed ready order after the first iteration). A bucket is, as DDP's, one buffer that
// each gradient is copied into as soon as it is computed (a `copy_` into a view of its slice of a
// `new_empty` made with the bucket's first gradient), so each gradient dies at its copy instead of
// living until the bucket's last one (compiled DDP's fuse_ddp_communication concatenates them at
// the last, which keeps a bucket's gradients alive twice over); after the last, it is divided by
// the world size and all-reduced in place (`div_`, `all_reduce_`, as Inductor's reinplacing of
// collectives makes them), then waited and split back before the output, so the rest of the
// backward overlaps the communication. The collectives are the last thing the pipeline adds (after
// the partition), so nothing reorders or recomputes them.
//
// Note [Sharded parameters]
// FSDP2's fully_shard (seed §13.48): each parameter is split along dim 0 into one row block per
// rank (padded to a multiple of the group size), and the traced function gathers the whole
// parameter from the blocks (gather_full_parameter: all_gather_into_tensor, wait_tensor, narrow
// away the padding), so the collectives are in the graph and their derivatives give the backward:
// the gathered parameter's gradient is reduce-scattered back to the blocks (all_gather's
// derivative). average_sharded_gradients makes that reduce_scatter an average over the ranks, as
// FSDP's. Under a recompute tag the min-cut gathers a parameter again in the backward rather than
// saving it (OpClasses::is_regather; FSDP's reshard_after_forward), and the memory schedule moves
// each gather to where its parameter is used, so only the parameters in use are whole at a time.
//
// Note [Re-gather or keep]
// Whether the backward gathers a parameter again or keeps the forward's gathered copy trades its
// bytes, alive from the forward to the backward, for communication. AOTConfig's
// reshard_after_forward true (FSDP2's default) tags the gather MUST_RECOMPUTE, false MUST_SAVE:
// the min-cut honours both at every budget. std::nullopt leaves it untagged, and the activation
// memory budget decides (memory_budget.cc): the runtime-optimized cut keeps it (a collective is
// never recomputed by the cut's own rules), so budget 1 keeps every gathered parameter; below 1,
// the budget's knapsacks take each gather's wait as an item like any banned activation -- its
// gathered bytes against the communication of gathering it again (estimate_runtime prices a
// collective by the bytes it receives, cost_model.h) -- and a plan that lets the cut re-gather it
// (solve_min_cut's dont_ban admits a re-gather, never another collective) is priced by its peak
// and that communication like the other plans; saving only the primals re-gathers them all. Only
// the gather of a graph input qualifies (OpClasses::is_regather): every rank holds the shard, so
// gathering it again is new communication, not a collective issued twice.
//
// Note [Sharded gradients' reduce-scatters]
// The traced forward gathers every parameter before the module runs, so the joint graph's
// backward, in autograd's reverse order, would reduce-scatter every gradient at its very end: every
// gathered parameter's whole gradient alive at once, as much memory as the parameters whole. So
// gather_parameters_at_first_use (the stage gather_at_first_use, before the joint graph) moves each
// gather to its first use in the forward, as FSDP2's pre-forward hook gathers a module's
// parameters: the joint graph's backward then reduce-scatters each gradient right after its layer,
// the partition keeps that order, and the memory budget prices the plans with it. After the
// partition, as FSDP2's post-backward hook, issue_sharded_reduce_scatters_early issues each
// reduce-scatter right after its gradient is computed (with the nodes only it uses: the gradient's
// views, the division), and waits it just before the next reduce-scatter is issued (the last at the
// end): one reduce-scatter in flight, which overlaps the next layer's backward, and each whole
// gradient freed once its reduce-scatter is waited.
#include "aotgrad/transforms/distributed/data_parallel.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/known_ops.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/op_classes.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {
namespace {

// The pass builds and recognises its own structures of specific ops: named handles (ops::).
bool calls(const Node* n, const OpDef& op) { return ops::is_call(n, op); }

std::string grad_name(const std::vector<std::string>& names, size_t i) {
  return i < names.size() && !names[i].empty() ? names[i] : "grad " + std::to_string(i);
}

// Node index of each node of `g` (placeholders and output included).
std::unordered_map<const Node*, int64_t> positions(const Graph& g) {
  std::unordered_map<const Node*, int64_t> pos;
  int64_t i = 0;
  for (const Node* n : g.nodes()) pos[n] = i++;
  return pos;
}

// Calls `f` with each node `n` takes as an argument (in lists too), once per use.
template <typename F>
void for_each_input(const Node* n, F&& f) {
  for (const Arg& a : n->args()) a.for_each_node(f);
}

// The calls and getitems of `g`, in graph order.
std::vector<const Node*> body_of(const Graph& g) {
  std::vector<const Node*> body;
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call || n->kind() == NodeKind::GetItem) body.push_back(n);
  return body;
}

std::string format_bytes(int64_t b) {
  char buf[64];
  if (b >= (1 << 20))
    std::snprintf(buf, sizeof buf, "%lld bytes (%.2f MiB)", static_cast<long long>(b),
                  static_cast<double>(b) / (1 << 20));
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%lld bytes (%.1f KiB)", static_cast<long long>(b),
                  static_cast<double>(b) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(b));
  return buf;
}

}  // namespace

const char* grad_reduction_name(GradReduction r) {
  return r == GradReduction::kAvg ? "avg" : "sum";
}

std::string BucketPlan::text() const {
  std::string out;
  for (size_t b = 0; b < buckets.size(); ++b) {
    const GradBucket& k = buckets[b];
    out += "bucket " + std::to_string(b) + ": " + std::to_string(k.grads.size()) +
           (k.grads.size() == 1 ? " grad (" : " grads (");
    for (size_t i = 0; i < k.grads.size(); ++i) out += (i ? ", " : "") + k.grads[i].name;
    out += "), " + format_bytes(k.bytes) + " " + std::string(short_name(k.dtype)) +
           ", all_reduce '" + grad_reduction_name(reduction) + "'" +
           (reduction == GradReduction::kSumDivided
                ? " of the grads divided by " + std::to_string(group_size)
                : std::string()) +
           " on group '" + group_name + "' issued after '" + k.issued_after + "' (node " +
           std::to_string(k.position) + " of " + std::to_string(k.of) +
           " of the backward), waited at the end\n";
  }
  return out;
}

BucketPlan plan_gradient_buckets(const Graph& bw, const DataParallelOptions& options) {
  AOTGRAD_CHECK(options.group_size >= 1, "data parallel: group size ", options.group_size);
  AOTGRAD_CHECK(options.bucket_cap_bytes > 0 && options.first_bucket_cap_bytes > 0,
                "data parallel: bucket caps must be positive, got ", options.first_bucket_cap_bytes,
                " and ", options.bucket_cap_bytes, " bytes");
  BucketPlan plan;
  plan.group_name = options.group_name;
  plan.group_size = options.group_size;
  plan.reduction = options.reduction;
  AOTGRAD_CHECK(bw.output() != nullptr, "data parallel: the backward graph has no output");
  const std::vector<Arg>& outs = bw.output()->args()[0].list;
  AOTGRAD_CHECK(options.reduce.empty() || options.reduce.size() == outs.size(),
                "data parallel: ", options.reduce.size(), " reduce flags for ", outs.size(),
                " gradients");
  std::unordered_map<const Node*, int64_t> pos = positions(bw);
  // The gradients in the order the graph produces them (outputs of one value: in output order).
  std::vector<std::pair<int64_t, int>> order;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].is_node() || (!options.reduce.empty() && !options.reduce[i])) continue;
    const Node* n = outs[i].node;
    AOTGRAD_CHECK(n->meta().is_tensor(), "data parallel: gradient ", i, " ('", n->name(),
                  "') is not a tensor");
    order.push_back({pos.at(n), static_cast<int>(i)});
  }
  std::stable_sort(order.begin(), order.end());
  // Open buckets by dtype (DDP's buckets never mix dtypes or devices), and whether each dtype has
  // closed its first bucket.
  std::map<int, GradBucket> open;
  std::map<int, bool> had_first;
  auto close = [&](int key) {
    plan.buckets.push_back(std::move(open.at(key)));
    open.erase(key);
    had_first[key] = true;
  };
  const int64_t of = static_cast<int64_t>(bw.size());
  for (const auto& [p, i] : order) {
    const Node* n = outs[i].node;
    const TensorMeta& t = n->tensor_meta();
    std::optional<int64_t> numel = t.numel().maybe_value();
    AOTGRAD_CHECK(numel.has_value(), "data parallel: gradient ", i, " ('",
                  grad_name(options.names, i), "', value '", n->name(), "' of ", t.annotation(),
                  ") has symbolic sizes; gradient buckets need static sizes");
    int key = static_cast<int>(t.dtype);
    GradBucket& b = open[key];
    b.dtype = t.dtype;
    b.grads.push_back({i, grad_name(options.names, i), n->name(), *numel});
    b.bytes += *numel * element_size(t.dtype);
    b.issued_after = n->name();
    b.position = p;
    b.of = of;
    int64_t cap = had_first[key] ? options.bucket_cap_bytes : options.first_bucket_cap_bytes;
    if (b.bytes >= cap) close(key);
  }
  // The rest, in the order of their last gradient.
  std::vector<std::pair<int64_t, int>> rest;
  for (const auto& [key, b] : open) rest.push_back({b.position, key});
  std::sort(rest.begin(), rest.end());
  for (const auto& [p, key] : rest) close(key);
  std::stable_sort(
      plan.buckets.begin(), plan.buckets.end(),
      [](const GradBucket& a, const GradBucket& b) { return a.position < b.position; });
  return plan;
}

void insert_gradient_all_reduces(Graph& bw, const BucketPlan& plan) {
  if (plan.buckets.empty()) return;
  const OpDef& view = ops::view();
  const OpDef& new_empty = ops::new_empty();
  const OpDef& slice = ops::slice_Tensor();
  const OpDef& copy = ops::copy_();
  const OpDef& div = ops::div__Scalar();
  const OpDef& all_reduce = ops::all_reduce_();
  const OpDef& wait = ops::wait_tensor();
  const OpDef& split = ops::split_with_sizes();
  Node* out = bw.output();
  AOTGRAD_CHECK(out != nullptr, "data parallel: the backward graph has no output");
  std::vector<Arg> outs = out->args()[0].list;
  std::vector<Node*> reduced;  // per bucket: its all_reduce
  Node* saved_point = bw.insertion_point();
  // New nodes go right after `n` (after the placeholders when it is one).
  auto after = [&](Node* n) {
    Node* at = n->next();
    while (at && at->kind() == NodeKind::Placeholder) at = at->next();
    bw.set_insertion_point(at);
  };
  for (const GradBucket& b : plan.buckets) {
    int64_t numel = 0;
    for (const GradBucket::Grad& g : b.grads) numel += g.numel;
    Node* bucket = nullptr;
    Node* last_copy = nullptr;
    int64_t offset = 0;
    for (const GradBucket::Grad& g : b.grads) {
      Node* v = outs.at(g.output).node;
      AOTGRAD_CHECK(v != nullptr && v->name() == g.value, "data parallel: gradient ", g.output,
                    " is not '", g.value, "'");
      // The bucket is made with its first gradient, and each gradient is copied into it as soon as
      // it is computed, so that it dies there (Note [Gradient buckets]).
      after(v);
      if (!bucket) bucket = bw.add_call(new_empty, {Arg(v), Arg::of_ints({numel})});
      Node* place = bw.add_call(
          slice, {Arg(bucket), Arg::of_int(0), Arg::of_int(offset), Arg::of_int(offset + g.numel)});
      place = bw.add_call(view, {Arg(place), Arg::of_symints(v->tensor_meta().sizes)});
      last_copy = bw.add_call(copy, {Arg(place), Arg(v)});
      offset += g.numel;
    }
    AOTGRAD_CHECK(b.grads.back().value == b.issued_after, "data parallel: bucket issued after '",
                  b.issued_after, "', not its last gradient");
    // Right after the last gradient's copy.
    after(last_copy);
    Node* x = bucket;
    if (plan.reduction == GradReduction::kSumDivided)
      x = bw.add_call(div, {Arg(x), Arg::of_int(plan.group_size)});
    reduced.push_back(bw.add_call(
        all_reduce,
        {Arg(x), Arg::of_str(grad_reduction_name(plan.reduction)), Arg::of_str(plan.group_name)}));
  }
  // At the end: wait, split back, view as the gradients.
  bw.set_insertion_point(out);
  for (size_t k = 0; k < plan.buckets.size(); ++k) {
    const GradBucket& b = plan.buckets[k];
    Node* w = bw.add_call(wait, {Arg(reduced[k])});
    std::vector<Node*> pieces;
    if (b.grads.size() == 1) {
      pieces.push_back(w);
    } else {
      std::vector<int64_t> sizes;
      for (const GradBucket::Grad& g : b.grads) sizes.push_back(g.numel);
      Node* s = bw.add_call(split, {Arg(w), Arg::of_ints(sizes)});
      for (size_t i = 0; i < b.grads.size(); ++i)
        pieces.push_back(bw.add_getitem(s, static_cast<int64_t>(i)));
    }
    for (size_t i = 0; i < b.grads.size(); ++i) {
      const GradBucket::Grad& g = b.grads[i];
      const SymIntVector& sizes = outs[g.output].node->tensor_meta().sizes;
      outs[g.output] = Arg(bw.add_call(view, {Arg(pieces[i]), Arg::of_symints(sizes)}));
    }
  }
  Arg result = out->args()[0];
  result.list = std::move(outs);
  out->set_arg(0, std::move(result));
  bw.set_insertion_point(saved_point);
}

int64_t average_sharded_gradients(Graph& bw, const DataParallelOptions& options) {
  if (options.sharded.empty()) return 0;
  Node* out = bw.output();
  AOTGRAD_CHECK(out != nullptr, "sharded training: the backward graph has no output");
  const std::vector<Arg>& outs = out->args()[0].list;
  AOTGRAD_CHECK(options.sharded.size() == outs.size(), "sharded training: ", options.sharded.size(),
                " sharded flags for ", outs.size(), " gradients");
  const OpDef& div = ops::div_Scalar();
  Node* saved_point = bw.insertion_point();
  int64_t n = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!options.sharded[i] || !outs[i].is_node()) continue;
    Node* w = outs[i].node;
    Node* rs = calls(w, ops::wait_tensor()) ? w->arg(0).node : nullptr;
    if (!calls(rs, ops::reduce_scatter_tensor()) || rs->arg(1).str != "sum" ||
        rs->arg(3).str != options.group_name || rs->users().size() != 1)
      throw Error("sharded training: the gradient of " + grad_name(options.names, i) + " ('" +
                  w->name() + "') is not the reduce_scatter 'sum' on group '" + options.group_name +
                  "' of its all_gather's gradient; a sharded parameter may be used only "
                  "through gather_full_parameter");
    if (options.reduction == GradReduction::kAvg) {
      rs->set_arg(1, Arg::of_str("avg"));
    } else {
      bw.set_insertion_point(rs);
      rs->set_arg(0, Arg(bw.add_call(div, {rs->arg(0), Arg::of_int(options.group_size)})));
    }
    ++n;
  }
  bw.set_insertion_point(saved_point);
  return n;
}

std::unique_ptr<Graph> gather_parameters_at_first_use(const Graph& fw) {
  const OpClasses& ops = OpClasses::defaults();
  std::vector<const Node*> body = body_of(fw);
  std::unordered_map<const Node*, size_t> pos;
  for (size_t k = 0; k < body.size(); ++k) pos[body[k]] = k;
  // Each gather: the all_gather of an input, its wait and the views taken of them alone (in graph
  // order), keyed by the first node outside them that uses one of them.
  std::unordered_map<const Node*, std::vector<std::vector<const Node*>>> before;
  std::unordered_set<const Node*> moved;
  for (const Node* n : body) {
    if (!OpClasses::is_regather(*n) || !calls(n, ops::all_gather_into_tensor()) || moved.count(n))
      continue;
    std::vector<const Node*> chain{n};
    std::unordered_set<const Node*> in_chain{n};
    for (size_t k = 0; k < chain.size(); ++k)
      for (const Node* u : chain[k]->users()) {
        if (in_chain.count(u) || u->kind() != NodeKind::Call) continue;
        if (!calls(u, ops::wait_tensor()) && !ops.is_view(*u)) continue;
        bool only_chain = true;
        for_each_input(u, [&](const Node* a) {
          only_chain = only_chain && (in_chain.count(a) || a->kind() == NodeKind::Placeholder);
        });
        if (!only_chain) continue;
        chain.push_back(u);
        in_chain.insert(u);
      }
    std::sort(chain.begin(), chain.end(),
              [&](const Node* a, const Node* b) { return pos.at(a) < pos.at(b); });
    const Node* first = nullptr;  // nullptr: only the output uses them
    for (const Node* c : chain)
      for (const Node* u : c->users())
        if (!in_chain.count(u) && u->kind() != NodeKind::Output &&
            (!first || pos.at(u) < pos.at(first)))
          first = u;
    for (const Node* c : chain) moved.insert(c);
    before[first].push_back(std::move(chain));
  }
  if (moved.empty()) return nullptr;
  std::vector<const Node*> order;
  auto emit_before = [&](const Node* n) {
    auto it = before.find(n);
    if (it == before.end()) return;
    for (const auto& chain : it->second) order.insert(order.end(), chain.begin(), chain.end());
  };
  for (const Node* n : body) {
    if (moved.count(n)) continue;
    emit_before(n);
    order.push_back(n);
  }
  emit_before(nullptr);
  AOTGRAD_CHECK(order.size() == body.size(), "sharded training: the gathers' order has ",
                order.size(), " of the forward's ", body.size(), " nodes");
  return order == body ? nullptr : copy_in_order(fw, order);
}

std::unique_ptr<Graph> issue_sharded_reduce_scatters_early(const Graph& bw,
                                                           const DataParallelOptions& options) {
  if (options.sharded.empty() || !bw.output()) return nullptr;
  const std::vector<Arg>& outs = bw.output()->args()[0].list;
  std::unordered_map<const Node*, int64_t> pos = positions(bw);
  // One reduce-scatter: the nodes only it uses (graph order), and the last node it needs.
  struct Early {
    const Node* rs = nullptr;
    const Node* wait = nullptr;
    std::vector<const Node*> chain;
    int64_t anchor = -1;
  };
  std::vector<Early> early;
  std::unordered_set<const Node*> moved;
  for (size_t i = 0; i < outs.size() && i < options.sharded.size(); ++i) {
    if (!options.sharded[i] || !outs[i].is_node() || !calls(outs[i].node, ops::wait_tensor()))
      continue;
    Early e;
    e.wait = outs[i].node;
    e.rs = e.wait->arg(0).node;
    if (!calls(e.rs, ops::reduce_scatter_tensor()) || e.rs->users().size() != 1 ||
        moved.count(e.rs))
      continue;
    // The ancestors that only this reduce-scatter uses and that may move: calls that write
    // nothing, draw no random numbers, have no effects and communicate nothing.
    std::unordered_set<const Node*> in_chain{e.rs};
    std::vector<const Node*> work{e.rs};
    while (!work.empty()) {
      const Node* n = work.back();
      work.pop_back();
      for_each_input(n, [&](const Node* a) {
        if (in_chain.count(a) || a->kind() != NodeKind::Call || has_mutations(*a) ||
            is_random(*a->op()) || is_effectful(*a->op()) || is_collective(*a->op()))
          return;
        for (const Node* u : a->users())
          if (!in_chain.count(u)) return;
        in_chain.insert(a);
        work.push_back(a);
      });
    }
    for (const Node* n : in_chain) {
      if (n != e.rs) e.chain.push_back(n);
      for_each_input(n, [&](const Node* a) {
        if (!in_chain.count(a)) e.anchor = std::max(e.anchor, pos.at(a));
      });
    }
    std::sort(e.chain.begin(), e.chain.end(),
              [&](const Node* a, const Node* b) { return pos.at(a) < pos.at(b); });
    for (const Node* n : in_chain) moved.insert(n);
    moved.insert(e.wait);
    early.push_back(std::move(e));
  }
  if (early.empty()) return nullptr;
  std::stable_sort(early.begin(), early.end(),
                   [&](const Early& a, const Early& b) { return pos.at(a.rs) < pos.at(b.rs); });

  // The new order of the body: each chain and its reduce-scatter right after its anchor; each wait
  // before the next reduce-scatter, before its first user, or at the end.
  std::vector<const Node*> order;
  std::unordered_set<const Node*> emitted;
  std::vector<const Node*> deferred;  // waits not yet emitted, oldest first
  auto emit_plain = [&](const Node* n) {
    order.push_back(n);
    emitted.insert(n);
  };
  std::function<void(const Node*)> emit = [&](const Node* n) {
    for_each_input(n, [&](const Node* a) {
      auto it = std::find(deferred.begin(), deferred.end(), a);
      if (it == deferred.end()) return;
      deferred.erase(it);
      emit(a);
    });
    emit_plain(n);
  };
  size_t next = 0;
  auto emit_early_after = [&](int64_t p) {
    for (; next < early.size(); ++next) {
      const Early& e = early[next];
      if (e.anchor > p) break;
      for (const Node* c : e.chain) emit(c);
      for (const Node* w : deferred) emit_plain(w);
      deferred.clear();
      emit(e.rs);
      deferred.push_back(e.wait);
    }
  };
  // Anchors are positions of nodes the chains need, so the chains sorted by reduce-scatter may
  // have anchors out of order: place each once its anchor and every earlier chain are placed.
  std::stable_sort(early.begin(), early.end(),
                   [](const Early& a, const Early& b) { return a.anchor < b.anchor; });
  std::vector<const Node*> body = body_of(bw);
  int64_t last_placeholder = -1;
  for (const Node* n : bw.placeholders()) last_placeholder = std::max(last_placeholder, pos.at(n));
  emit_early_after(last_placeholder);
  for (const Node* n : body) {
    if (moved.count(n)) continue;
    emit(n);
    emit_early_after(pos.at(n));
  }
  emit_early_after(std::numeric_limits<int64_t>::max());
  for (const Node* w : deferred) emit_plain(w);
  AOTGRAD_CHECK(order.size() == body.size(), "sharded training: the reduce-scatters' order has ",
                order.size(), " of the backward's ", body.size(), " nodes");
  return order == body ? nullptr : copy_in_order(bw, order);
}

BucketPlan read_bucket_plan(const Graph& bw, const std::vector<std::string>& names) {
  BucketPlan plan;
  if (!bw.output()) return plan;
  std::unordered_map<const Node*, int64_t> pos = positions(bw);
  const std::vector<Arg>& outs = bw.output()->args()[0].list;
  std::unordered_map<const Node*, int> output_of;
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i].is_node()) output_of[outs[i].node] = static_cast<int>(i);
  auto fail = [](const Node* n, const std::string& what) {
    throw Error("data parallel: " + n->describe() +
                " is not a gradient bucket's all_reduce: " + what);
  };
  for (const Node* a : bw.nodes()) {
    if (!calls(a, ops::all_reduce()) && !calls(a, ops::all_reduce_())) continue;
    const Node* x = a->arg(0).node;
    std::string op = a->arg(1).str;
    GradReduction reduction = op == "avg" ? GradReduction::kAvg : GradReduction::kSumDivided;
    int64_t size = 1;
    if (calls(x, ops::div_Scalar()) || calls(x, ops::div__Scalar())) {
      if (x->arg(1).kind != Arg::Kind::Int) fail(a, "its divisor is not an int");
      size = x->arg(1).i;
      x = x->arg(0).node;
    }
    // The gradients: a concatenation of their flattened values, or a bucket made with new_empty
    // that each is copied into (a view of a slice of it).
    std::vector<const Node*> grads;
    if (calls(x, ops::cat())) {
      for (const Arg& v : x->arg(0).list) {
        const Node* g = v.node;
        if (!calls(g, ops::view())) fail(a, "a cat input is not a view");
        g = g->arg(0).node;
        if (calls(g, ops::clone())) g = g->arg(0).node;
        grads.push_back(g);
      }
    } else if (calls(x, ops::new_empty())) {
      std::vector<std::pair<int64_t, const Node*>> pieces;  // (offset, gradient)
      for (const Node* sl : x->users()) {
        if (!calls(sl, ops::slice_Tensor())) continue;
        const Node* v = sl->users().size() == 1 ? sl->users()[0] : nullptr;
        const Node* c = calls(v, ops::view()) && v->users().size() == 1 ? v->users()[0] : nullptr;
        if (!calls(c, ops::copy_()) || c->arg(0).node != v || sl->arg(2).kind != Arg::Kind::Int)
          fail(a, "a slice of its bucket is not a gradient's copy");
        pieces.push_back({sl->arg(2).i, c->arg(1).node});
      }
      std::sort(pieces.begin(), pieces.end(),
                [](const auto& l, const auto& r) { return l.first < r.first; });
      for (const auto& [offset, g] : pieces) grads.push_back(g);
    } else {
      fail(a, "its input is neither a cat nor a bucket made with new_empty");
    }
    GradBucket b;
    b.of = static_cast<int64_t>(bw.size());
    b.position = -1;
    for (const Node* g : grads) {
      if (pos.at(g) > b.position) {
        b.position = pos.at(g);
        b.issued_after = g->name();
      }
      const TensorMeta& t = g->tensor_meta();
      b.dtype = t.dtype;
      b.grads.push_back({-1, "", g->name(), t.numel().hint_or(0)});
      b.bytes += t.numel().hint_or(0) * element_size(t.dtype);
    }
    // The wait, the split and the views the graph returns.
    const Node* w = nullptr;
    for (const Node* u : a->users())
      if (calls(u, ops::wait_tensor())) w = u;
    if (!w) fail(a, "it is not waited");
    std::vector<const Node*> pieces(b.grads.size(), nullptr);
    if (b.grads.size() == 1) {
      pieces[0] = w;
    } else {
      for (const Node* s : w->users()) {
        if (!calls(s, ops::split_with_sizes())) continue;
        for (const Node* gi : s->users())
          if (gi->kind() == NodeKind::GetItem &&
              gi->getitem_index() < static_cast<int64_t>(pieces.size()))
            pieces[gi->getitem_index()] = gi;
      }
    }
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (!pieces[i]) fail(a, "its result is not split back");
      for (const Node* v : pieces[i]->users())
        if (calls(v, ops::view()) && output_of.count(v)) b.grads[i].output = output_of.at(v);
      if (b.grads[i].output < 0) fail(a, "a piece of its result is not returned");
      b.grads[i].name = grad_name(names, b.grads[i].output);
    }
    if (plan.buckets.empty()) {
      plan.group_name = a->arg(2).str;
      plan.reduction = reduction;
      plan.group_size = size;
    }
    plan.buckets.push_back(std::move(b));
  }
  return plan;
}

}  // namespace aotgrad

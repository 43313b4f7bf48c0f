// aotgrad: data-parallel gradient buckets in the backward graph.
//
// Note [Gradient buckets]
// DDP's Reducer packs parameters' gradients into buckets (25 MiB, the first 1 MiB so that
// communication starts early), all-reduces each bucket as soon as its last gradient is ready and
// waits for all of them before the optimizer step. With the whole backward as one graph the ready
// order is the graph's node order, so the buckets are made in that order (DDP rebuilds its buckets
// in the observed ready order after the first iteration). A bucket is, as in compiled DDP's
// fuse_ddp_communication (torch/_inductor/fx_passes/ddp_fusion.py), a concatenation of flattened
// gradients, divided by the world size, one all_reduce 'sum' right after its last gradient, and a
// wait_tensor and split_with_sizes before the output, so the rest of the backward overlaps the
// communication. The concatenation is the graph's own buffer, so it is divided and all-reduced in
// place (`div_`, `all_reduce_`, as Inductor's reinplacing of collectives makes them): one copy of
// the gradients per bucket, as DDP's bucket, where the functional ops made three. The collectives
// are the last thing the pipeline adds (after the partition), so nothing reorders or recomputes
// them.
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
#include "aotgrad/transforms/data_parallel.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

const char* kAllReduce = "_c10d_functional::all_reduce";
const char* kAllReduceInplace = "_c10d_functional::all_reduce_";
const char* kWait = "_c10d_functional::wait_tensor";
const char* kReduceScatter = "_c10d_functional::reduce_scatter_tensor";

bool calls(const Node* n, std::string_view op) {
  return n && n->kind() == NodeKind::Call && n->op()->name == op;
}

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
  const OpTable& ops = aten_ops();
  const OpDef& view = ops.get("aten::view");
  const OpDef& clone = ops.get("aten::clone");
  const OpDef& cat = ops.get("aten::cat");
  const OpDef& div = ops.get("aten::div_.Scalar");
  const OpDef& all_reduce = ops.get(kAllReduceInplace);
  const OpDef& wait = ops.get(kWait);
  const OpDef& split = ops.get("aten::split_with_sizes");
  Node* out = bw.output();
  AOTGRAD_CHECK(out != nullptr, "data parallel: the backward graph has no output");
  std::vector<Arg> outs = out->args()[0].list;
  std::vector<Node*> reduced;  // per bucket: its all_reduce
  Node* saved_point = bw.insertion_point();
  for (const GradBucket& b : plan.buckets) {
    Node* last = bw.find(b.issued_after);
    AOTGRAD_CHECK(last != nullptr, "data parallel: no value '", b.issued_after,
                  "' in the backward graph");
    // Right after the last gradient (after the placeholders when it is one).
    Node* at = last->next();
    while (at && at->kind() == NodeKind::Placeholder) at = at->next();
    bw.set_insertion_point(at);
    std::vector<Arg> flat;
    for (const GradBucket::Grad& g : b.grads) {
      Node* v = outs.at(g.output).node;
      AOTGRAD_CHECK(v != nullptr && v->name() == g.value, "data parallel: gradient ", g.output,
                    " is not '", g.value, "'");
      if (!v->tensor_meta().is_contiguous())
        v = bw.add_call(clone, {Arg(v)},
                        {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
      flat.push_back(Arg(bw.add_call(view, {Arg(v), Arg::of_ints({g.numel})})));
    }
    Node* x = bw.add_call(cat, {Arg::of_list(std::move(flat))});
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
  const OpDef& div = aten_ops().get("aten::div.Scalar");
  Node* saved_point = bw.insertion_point();
  int64_t n = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!options.sharded[i] || !outs[i].is_node()) continue;
    Node* w = outs[i].node;
    Node* rs = calls(w, kWait) ? w->arg(0).node : nullptr;
    if (!calls(rs, kReduceScatter) || rs->arg(1).str != "sum" ||
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
    if (!calls(a, kAllReduce) && !calls(a, kAllReduceInplace)) continue;
    const Node* x = a->arg(0).node;
    std::string op = a->arg(1).str;
    GradReduction reduction = op == "avg" ? GradReduction::kAvg : GradReduction::kSumDivided;
    int64_t size = 1;
    if (calls(x, "aten::div.Scalar") || calls(x, "aten::div_.Scalar")) {
      if (x->arg(1).kind != Arg::Kind::Int) fail(a, "its divisor is not an int");
      size = x->arg(1).i;
      x = x->arg(0).node;
    }
    if (!calls(x, "aten::cat")) fail(a, "its input is not a cat");
    GradBucket b;
    b.of = static_cast<int64_t>(bw.size());
    b.position = -1;
    std::vector<std::string> values;
    for (const Arg& v : x->arg(0).list) {
      const Node* g = v.node;
      if (!calls(g, "aten::view")) fail(a, "a cat input is not a view");
      g = g->arg(0).node;
      if (calls(g, "aten::clone")) g = g->arg(0).node;
      values.push_back(g->name());
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
      if (calls(u, kWait)) w = u;
    if (!w) fail(a, "it is not waited");
    std::vector<const Node*> pieces(b.grads.size(), nullptr);
    if (b.grads.size() == 1) {
      pieces[0] = w;
    } else {
      for (const Node* s : w->users()) {
        if (!calls(s, "aten::split_with_sizes")) continue;
        for (const Node* gi : s->users())
          if (gi->kind() == NodeKind::GetItem &&
              gi->getitem_index() < static_cast<int64_t>(pieces.size()))
            pieces[gi->getitem_index()] = gi;
      }
    }
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (!pieces[i]) fail(a, "its result is not split back");
      for (const Node* v : pieces[i]->users())
        if (calls(v, "aten::view") && output_of.count(v)) b.grads[i].output = output_of.at(v);
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

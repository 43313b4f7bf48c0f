// aotgrad: values of the backward computed again after the step's peak.
#include "aotgrad/transforms/partition/recompute_again.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/partition/memory_schedule.h"
#include "aotgrad/transforms/partition/memory_timeline.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {

// Note [Computed again]
// The min cut, PyTorch's and aotgrad's, decides for each forward value whether the backward
// reads it saved or computes it again, and computes it at most once: the value then lives from
// its first backward use to its last. When those uses straddle the backward's peak, the value
// is live there although nothing at the peak reads it. A GPT block's MLP shows it: the backward
// recomputes the fc pre-activation h for two uses, gelu(h) (read by the output projection's
// weight gradient, the 4x-wide matmul that makes the peak) and gelu_backward(grad, h) after it;
// h (4x the residual width) is live at the peak beside gelu(h) and the weight gradient. Computing
// h a second time, from the same saved inputs, just before gelu_backward frees it after gelu(h):
// one more small matmul for a quarter less peak (gpt_block: 41096 -> 32904 bytes).
//
// This pass does that after the partition, priced by the step's own timeline: it copies a pure
// call of the backward (and the views of it the later uses read) for the uses after the peak,
// keeps a copy only if the predicted peak falls, and repeats from the new peak. Inputs of the
// copy must still be alive at the later use; where they would not be, their lives lengthen, and
// the timeline prices that too. The memory budget weighs the result as plans of their own
// (memory_budget.h): their cost is the copied calls' estimated runtime, so the budget and
// --memory-budget=auto take them only where the memory is worth that time.

namespace {

struct Candidate {
  const Node* value = nullptr;  // the call, or the getitem of a multi-result call
  int64_t bytes = 0;
  std::vector<const Node*> late;  // the calls after the peak that read it (or a view of it)
};

// The values live across step `peak` of `bw` that a copy could free there, largest first.
std::vector<Candidate> candidates(const Graph& bw, size_t peak) {
  std::unordered_map<const Node*, size_t> pos;
  {
    size_t k = 0;
    for (const Node* n : bw.nodes())
      if (n->kind() == NodeKind::Call || n->kind() == NodeKind::GetItem) pos[n] = k++;
  }
  std::vector<const Node*> roots = storage_roots(bw);
  // A value's group: itself and its views.
  std::unordered_map<const Node*, std::vector<const Node*>> group;
  {
    size_t k = 0;
    for (const Node* n : bw.nodes()) group[roots[k++]].push_back(n);
  }
  std::vector<Candidate> out;
  for (const auto& [root, members] : group) {
    if (root->kind() == NodeKind::Placeholder || root->kind() == NodeKind::Output) continue;
    const Node* call = root->kind() == NodeKind::GetItem ? root->getitem_input() : root;
    if (is_impure(*call) || !root->meta().is_tensor()) continue;
    std::unordered_set<const Node*> in_group(members.begin(), members.end());
    bool ok = pos.at(root) < peak && pos.at(call) < peak;
    std::vector<const Node*> late;
    for (const Node* m : members) {
      if (!ok) break;
      // The views of the value: calls, or getitems of a view returning several (split).
      if (m != root && (is_impure(*m) || pos.at(m) == peak)) ok = false;
      for (const Node* u : m->users()) {
        if (in_group.count(u)) continue;
        if (u->kind() == NodeKind::Output) ok = false;
        if (!ok) break;
        size_t p = pos.at(u);
        if (p == peak) ok = false;
        if (p > peak && std::find(late.begin(), late.end(), u) == late.end()) late.push_back(u);
      }
    }
    if (!ok || late.empty()) continue;
    std::sort(late.begin(), late.end(),
              [&](const Node* a, const Node* b) { return pos.at(a) < pos.at(b); });
    out.push_back({root, value_nbytes(root->meta()), std::move(late)});
  }
  std::sort(out.begin(), out.end(), [&](const Candidate& a, const Candidate& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : pos.at(a.value) < pos.at(b.value);
  });
  return out;
}

Arg remap_some(const Arg& a, const std::unordered_map<const Node*, Node*>& map) {
  if (a.is_node()) {
    auto it = map.find(a.node);
    return it == map.end() ? a : Arg(it->second);
  }
  if (a.is_list()) {
    Arg out = a;
    for (Arg& e : out.list) e = remap_some(e, map);
    return out;
  }
  return a;
}

// `bw` with candidate `c` (named in another copy of the graph) computed again before its first
// later use; returns the copies' names.
std::vector<std::string> copy_for_late_uses(Graph& bw, const Candidate& c) {
  Node* value = bw.find(c.value->name());
  std::vector<Node*> late;
  for (const Node* u : c.late) late.push_back(bw.find(u->name()));
  std::vector<const Node*> roots = storage_roots(bw);
  std::unordered_map<const Node*, const Node*> root_of;
  {
    size_t k = 0;
    for (const Node* n : bw.nodes()) root_of[n] = roots[k++];
  }
  std::unordered_map<const Node*, Node*> copies;
  std::vector<std::string> names;
  bw.set_insertion_point(late.front());
  auto copy_call = [&](const Node* n) {
    std::vector<Arg> args;
    for (const Arg& a : n->args()) args.push_back(remap_some(a, copies));
    Node* c2 = bw.add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(),
                               bw.unique_name(n->name() + "_again"));
    c2->info() = n->info();
    c2->info().origin = n->name();
    names.push_back(c2->name());
    return c2;
  };
  // Copies `n` (the value or a view of it) after copying what it reads of the group.
  std::function<Node*(const Node*)> copy = [&](const Node* n) -> Node* {
    if (auto it = copies.find(n); it != copies.end()) return it->second;
    Node* made = nullptr;
    if (n->kind() == NodeKind::GetItem) {
      // The call: the value's producer, or a view of the value that returns several (split).
      Node* cc = copy(n->getitem_input());
      made = bw.add_getitem(cc, n->getitem_index(), bw.unique_name(n->name() + "_again"));
      names.push_back(made->name());
    } else {
      for (const Arg& a : n->args())
        a.for_each_node([&](Node* x) {
          if (x != n && root_of.at(x) == value) copy(x);
        });
      made = copy_call(n);
    }
    copies[n] = made;
    return made;
  };
  for (Node* u : late)
    for (size_t i = 0; i < u->args().size(); ++i) {
      bool reads = false;
      u->arg(i).for_each_node([&](Node* x) { reads = reads || root_of.at(x) == value; });
      if (!reads) continue;
      u->arg(i).for_each_node([&](Node* x) {
        if (root_of.at(x) == value) copy(x);
      });
      u->set_arg(i, remap_some(u->arg(i), copies), u->arg_given(i));
    }
  bw.set_insertion_point(nullptr);
  eliminate_dead_code(bw);
  return names;
}

double calls_cost(const Graph& g, const CostModel& model) {
  double s = 0;
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call) s += estimate_runtime(*n, model);
  return s;
}

}  // namespace

RecomputeAgain recompute_again(const Graph& fw, std::unique_ptr<Graph>& bw,
                               const std::vector<std::string>& saved,
                               const RecomputeAgainOptions& options) {
  const bool kept = options.gradients_kept && offers_outputs_early(*bw);
  auto timeline = [&](const Graph& b) {
    return training_step_timeline(fw, b, saved, /*reinplace=*/true, kept);
  };
  if (options.scheduled) schedule_backward_for_memory(fw, bw, saved, kept);
  MemoryTimeline t = timeline(*bw);
  RecomputeAgain r;
  r.peak_before = r.peak_after = t.peak_bytes;
  const int64_t forward = phase_peak(t, /*backward=*/false);
  const double base_cost = calls_cost(*bw, options.cost_model);
  for (int round = 0; round < options.max_rounds; ++round) {
    size_t at = 0;
    const int64_t peak = phase_peak(t, /*backward=*/true, &at);
    if (peak <= forward) break;
    std::vector<Candidate> cands = candidates(*bw, at);
    if (cands.size() > static_cast<size_t>(options.max_candidates))
      cands.resize(options.max_candidates);
    std::unique_ptr<Graph> best;
    MemoryTimeline best_t;
    RecomputeAgainRound best_round;
    for (const Candidate& c : cands) {
      // A copy frees at most the value's own bytes at this step (the candidates come largest
      // first): one too small for the least gain, or for more than the best copy's, ends the
      // round.
      if (static_cast<double>(c.bytes) < options.min_gain * static_cast<double>(t.peak_bytes) ||
          (best && peak - c.bytes >= best_t.peak_bytes))
        break;
      std::unique_ptr<Graph> g = bw->clone();
      std::vector<std::string> names = copy_for_late_uses(*g, c);
      if (options.scheduled) schedule_backward_for_memory(fw, g, saved, kept);
      MemoryTimeline gt = timeline(*g);
      if (gt.peak_bytes >= (best ? best_t.peak_bytes : t.peak_bytes)) continue;
      if (static_cast<double>(t.peak_bytes - gt.peak_bytes) <
          options.min_gain * static_cast<double>(t.peak_bytes))
        continue;
      best = std::move(g);
      best_t = std::move(gt);
      best_round.value = c.value->name();
      best_round.copies = std::move(names);
      best_round.uses.clear();
      for (const Node* u : c.late) best_round.uses.push_back(u->name());
    }
    if (!best) break;
    bw = std::move(best);
    t = std::move(best_t);
    best_round.peak_bytes = t.peak_bytes;
    best_round.extra_cost = calls_cost(*bw, options.cost_model) - base_cost;
    r.rounds.push_back(std::move(best_round));
    r.peak_after = t.peak_bytes;
  }
  return r;
}

std::string recompute_again_text(const RecomputeAgain& r) {
  std::string out;
  for (const RecomputeAgainRound& k : r.rounds) {
    out += k.value + " again as ";
    for (size_t i = 0; i < k.copies.size(); ++i) out += (i ? ", " : "") + k.copies[i];
    out += " for ";
    for (size_t i = 0; i < k.uses.size(); ++i) out += (i ? ", " : "") + k.uses[i];
    out += " (peak " + std::to_string(k.peak_bytes) + " bytes)\n";
  }
  return out;
}

}  // namespace aotgrad

// aotgrad: live activation bytes, and a training step's live bytes, over a partition's schedule.
#include "aotgrad/transforms/partition/memory_timeline.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <unordered_set>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/node_map.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/partition/min_cut.h"
#include "aotgrad/transforms/passes/dce.h"
#include "aotgrad/transforms/passes/reinplace.h"

namespace aotgrad {
namespace {

struct Storage {
  const Node* root = nullptr;  // the value that made it; none for the tangents
  int64_t bytes = 0;
  int64_t first = -1, last = -1;
  void touch(int64_t step) {
    if (first < 0 || step < first) first = step;
    last = std::max(last, step);
  }
};

bool is_step(const Node* n) {
  return n->kind() == NodeKind::Call || n->kind() == NodeKind::GetItem;
}

}  // namespace

bool offers_outputs_early(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->kind() == NodeKind::Call &&
        (has_mutations(*n) || is_collective(*n->op()) || is_effectful(*n->op())))
      return false;
  return true;
}

namespace {

bool read_by_a_call(const Node* n) {
  for (const Node* u : n->users())
    if (u->kind() != NodeKind::Output) return true;
  return false;
}

// Scratch a CPU kernel allocates through libtorch's allocator beyond its results, while it runs:
// its op's declared formula (OpDef::scratch_bytes; convolution, convolution_backward and
// native_batch_norm_backward declare one, as measured with the tracking allocator).
int64_t kernel_scratch_bytes(const Node& n) {
  if (n.kind() != NodeKind::Call || !n.op()->scratch_bytes) return 0;
  return static_cast<int64_t>(n.op()->scratch_bytes(MetaArgs(*n.op(), n.args()), n.meta()));
}

// One builder for both timelines; `name_peak` fills peak_live (reports only: the passes that
// price many timelines do not need it). `whole_step` adds what the runtime holds besides the
// activations: the forward's outputs (until the end of the step), the tangents (from the start of
// the backward to the end) and the gradients (from the step that makes them to the end; with
// `gradients_kept`, only those a later call reads); and it keeps each element of a multi-result
// call live from that call, as the interpreter holds the tuple until its last getitem.
MemoryTimeline build_timeline(const Graph& fw, const Graph& bw,
                              const std::vector<std::string>& saved, bool whole_step,
                              bool reinplace, bool gradients_kept, bool name_peak) {
  auto roots = [&](const Graph& g) {
    return storage_roots(g, reinplace ? reinplaced_args(reinplace_plan(g)) : std::vector<int>{});
  };
  MemoryTimeline t;
  std::vector<Storage> storages;
  // fw: storage per root node; inputs' views have no storage (-1).
  NodeMap<int64_t> step_of(fw.size() + bw.size());
  NodeMap<int> storage_of(fw.size() + bw.size());  // value -> index in storages
  storages.reserve(fw.size() + bw.size() + 1);
  std::vector<const Node*> fw_roots = roots(fw);
  std::vector<int> fw_inputs = input_alias_roots(fw);
  std::unordered_set<std::string> saved_set(saved.begin(), saved.end());
  NodeMap<int> root_storage(fw.size() + bw.size());
  auto storage_for = [&](const Node* root) {
    auto [index, fresh] = root_storage.emplace(root, static_cast<int>(storages.size()));
    if (fresh) {
      Storage s;
      s.root = root;
      s.bytes = root->meta().is_tensor() ? value_nbytes(root->meta()) : 0;
      if (whole_step && root->meta().kind == ValueMeta::Kind::Tuple) {
        // The elements no getitem reads; the others are the getitems' own storages.
        std::unordered_set<int64_t> read;
        for (const Node* u : root->users())
          if (u->kind() == NodeKind::GetItem) read.insert(u->getitem_index());
        for (size_t k = 0; k < root->meta().elems.size(); ++k)
          if (!read.count(static_cast<int64_t>(k)) && root->meta().elems[k].is_tensor())
            s.bytes += value_nbytes(root->meta().elems[k]);
      }
      storages.push_back(s);
    }
    return *index;
  };
  size_t pos = 0;
  for (const Node* n : fw.nodes()) {
    size_t i = pos++;
    if (!is_step(n)) continue;
    int64_t step = static_cast<int64_t>(t.steps.size());
    step_of.emplace(n, step);
    t.steps.push_back({n->name(), false, 0});
    if (fw_inputs[i] >= 0 || fw_roots[i]->kind() == NodeKind::Placeholder) continue;
    storage_of.emplace(n, storage_for(fw_roots[i]));
  }
  t.num_forward_steps = t.steps.size();
  auto extend = [&](const Graph& g) {
    for (const Node* n : g.nodes()) {
      const int* index = storage_of.find(n);
      if (!index) continue;
      Storage& s = storages[*index];
      if (const int64_t* st = step_of.find(n)) s.touch(*st);
      for (const Node* u : n->users())
        if (const int64_t* su = step_of.find(u)) s.touch(*su);
      if (!whole_step || n->kind() != NodeKind::GetItem) continue;
      // An element of a multi-result call exists from the call to the tuple's last getitem.
      const Node* src = n->getitem_input();
      if (const int64_t* sc = step_of.find(src)) s.touch(*sc);
      for (const Node* u : src->users())
        if (const int64_t* su = step_of.find(u)) s.touch(*su);
    }
  };
  extend(fw);
  // bw: saved placeholders continue their fw storage; fresh values get their own.
  for (const Node* p : bw.placeholders()) {
    if (!saved_set.count(p->name())) continue;
    const Node* f = fw.find(p->name());
    AOTGRAD_CHECK(f, "activation timeline: saved value '", p->name(),
                  "' is not a node of the forward graph");
    if (const int* index = storage_of.find(f)) storage_of.emplace(p, int{*index});
  }
  std::vector<const Node*> bw_roots = roots(bw);
  pos = 0;
  for (const Node* n : bw.nodes()) {
    size_t i = pos++;
    if (!is_step(n)) continue;
    step_of.emplace(n, static_cast<int64_t>(t.steps.size()));
    t.steps.push_back({n->name(), true, 0});
    const Node* root = bw_roots[i];
    if (root->kind() == NodeKind::Placeholder) {
      if (const int* index = storage_of.find(root)) storage_of.emplace(n, int{*index});
      continue;  // a view of a tangent (or of an input) is not an activation
    }
    storage_of.emplace(n, storage_for(root));
  }
  extend(bw);
  if (whole_step && !t.steps.empty()) {
    const int64_t last = static_cast<int64_t>(t.steps.size()) - 1;
    // `read_later_only`: only the outputs a call reads, which the interpreter does not offer
    // early (Note [Gradients accumulated as they are made]).
    auto hold_outputs = [&](const Graph& g, size_t count, bool read_later_only) {
      if (!g.output() || g.output()->args().empty()) return;
      std::vector<const Node*> leaves;
      std::function<void(const Arg&)> flat = [&](const Arg& a) {
        if (a.is_list())
          for (const Arg& e : a.list) flat(e);
        else if (a.is_node())
          leaves.push_back(a.node);
      };
      flat(g.output()->args()[0]);
      // Only node leaves are counted: a None output holds nothing.
      for (size_t k = 0; k < leaves.size() && k < count; ++k) {
        if (read_later_only && !read_by_a_call(leaves[k])) continue;
        if (const int* index = storage_of.find(leaves[k])) storages[*index].touch(last);
      }
    };
    // The forward's own outputs come before the saved values it returns.
    size_t fw_leaves = 0;
    if (fw.output() && !fw.output()->args().empty())
      fw.output()->args()[0].for_each_node([&](Node*) { ++fw_leaves; });
    hold_outputs(fw, fw_leaves > saved.size() ? fw_leaves - saved.size() : 0, false);
    hold_outputs(bw, SIZE_MAX, gradients_kept && offers_outputs_early(bw));
    // The tangents: made by the caller before the backward, held to the end.
    Storage tangents;
    for (const Node* p : bw.placeholders())
      if (!saved_set.count(p->name()) && p->meta().is_tensor())
        tangents.bytes += value_nbytes(p->meta());
    if (tangents.bytes > 0 && t.num_forward_steps < t.steps.size()) {
      tangents.touch(static_cast<int64_t>(t.num_forward_steps));
      tangents.touch(last);
      storages.push_back(tangents);
    }
  }
  // Each storage adds its bytes to the steps first..last: a difference array, then its sums.
  std::vector<int64_t> delta(t.steps.size() + 1);
  for (const Storage& s : storages) {
    if (s.first < 0) continue;
    delta[s.first] += s.bytes;
    delta[s.last + 1] -= s.bytes;
  }
  int64_t live = 0;
  for (size_t k = 0; k < t.steps.size(); ++k) {
    live += delta[k];
    t.steps[k].live_bytes += live;
  }
  // The step's nodes, fw's then bw's, as the steps were made.
  auto for_each_step_node = [&](const std::function<void(size_t, const Node&)>& f) {
    size_t k = 0;
    for (const Graph* g : {&fw, &bw})
      for (const Node* n : g->nodes())
        if (is_step(n)) f(k++, *n);
  };
  if (whole_step)
    for_each_step_node(
        [&](size_t k, const Node& n) { t.steps[k].live_bytes += kernel_scratch_bytes(n); });
  for (size_t k = 0; k < t.steps.size(); ++k)
    if (t.steps[k].live_bytes > t.peak_bytes) {
      t.peak_bytes = t.steps[k].live_bytes;
      t.peak_step = k;
    }
  // What makes the peak: the storages live at its step, and its kernel's scratch.
  if (name_peak && !t.steps.empty()) {
    const int64_t at = static_cast<int64_t>(t.peak_step);
    for (const Storage& st : storages)
      if (st.first >= 0 && st.first <= at && at <= st.last && st.bytes > 0)
        t.peak_live.push_back({st.root ? st.root->name() : "tangents", st.bytes});
    if (whole_step)
      for_each_step_node([&](size_t k, const Node& n) {
        if (k != t.peak_step) return;
        if (int64_t b = kernel_scratch_bytes(n); b > 0)
          t.peak_live.push_back({"scratch of " + n.name(), b});
      });
    std::sort(t.peak_live.begin(), t.peak_live.end(), [](const LiveValue& a, const LiveValue& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.value < b.value;
    });
  }
  return t;
}

}  // namespace

MemoryTimeline activation_timeline(const Graph& fw, const Graph& bw,
                                   const std::vector<std::string>& saved) {
  return build_timeline(fw, bw, saved, /*whole_step=*/false, /*reinplace=*/false,
                        /*gradients_kept=*/false, /*name_peak=*/false);
}

MemoryTimeline training_step_timeline(const Graph& fw, const Graph& bw,
                                      const std::vector<std::string>& saved, bool reinplace,
                                      bool gradients_kept) {
  return build_timeline(fw, bw, saved, /*whole_step=*/true, reinplace, gradients_kept,
                        /*name_peak=*/false);
}

MemoryTimeline training_step_peak_report(const Graph& fw, const Graph& bw,
                                         const std::vector<std::string>& saved, bool reinplace,
                                         bool gradients_kept) {
  return build_timeline(fw, bw, saved, /*whole_step=*/true, reinplace, gradients_kept,
                        /*name_peak=*/true);
}

int64_t phase_peak(const MemoryTimeline& t, bool backward, size_t* at) {
  int64_t peak = 0;
  const size_t lo = backward ? t.num_forward_steps : 0;
  const size_t hi = backward ? t.steps.size() : t.num_forward_steps;
  size_t first = 0;
  for (size_t k = lo; k < hi; ++k)
    if (t.steps[k].live_bytes > peak) {
      peak = t.steps[k].live_bytes;
      first = k - lo;
    }
  if (at) *at = first;
  return peak;
}

std::string peak_live_text(const MemoryTimeline& t, size_t most) {
  std::string out;
  int64_t rest = 0;
  for (size_t k = 0; k < t.peak_live.size(); ++k) {
    if (k >= most) {
      rest += t.peak_live[k].bytes;
      continue;
    }
    out += (k ? ", " : "") + t.peak_live[k].value + " " + std::to_string(t.peak_live[k].bytes);
  }
  if (t.peak_live.size() > most)
    out += " and " + std::to_string(t.peak_live.size() - most) + " more (" + std::to_string(rest) +
           ")";
  return out;
}

std::string peak_text(const MemoryTimeline& t) {
  if (t.steps.empty()) return "0 bytes";
  const TimelineStep& s = t.steps[t.peak_step];
  size_t index = s.backward ? t.peak_step - t.num_forward_steps : t.peak_step;
  size_t of = s.backward ? t.steps.size() - t.num_forward_steps : t.num_forward_steps;
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.2f", static_cast<double>(t.peak_bytes) / (1 << 20));
  return std::to_string(t.peak_bytes) + " bytes (" + mib + " MiB) at " + s.node + " (" +
         (s.backward ? "backward" : "forward") + " step " + std::to_string(index + 1) + " of " +
         std::to_string(of) + ")";
}

}  // namespace aotgrad

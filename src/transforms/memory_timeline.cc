// aotgrad: live activation bytes over a partition's schedule.
#include "aotgrad/transforms/memory_timeline.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

#include "aotgrad/ir/error.h"
#include "aotgrad/transforms/input_mutations.h"
#include "aotgrad/transforms/min_cut.h"

namespace aotgrad {
namespace {

struct Storage {
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

MemoryTimeline activation_timeline(const Graph& fw, const Graph& bw,
                                   const std::vector<std::string>& saved) {
  MemoryTimeline t;
  std::vector<Storage> storages;
  // fw: storage per root node; inputs' views have no storage (-1).
  std::unordered_map<const Node*, int64_t> step_of;
  std::unordered_map<const Node*, int> storage_of;  // value -> index in storages
  std::vector<const Node*> fw_roots = storage_roots(fw);
  std::vector<int> fw_inputs = input_alias_roots(fw);
  std::unordered_set<std::string> saved_set(saved.begin(), saved.end());
  std::unordered_map<const Node*, int> root_storage;
  auto storage_for = [&](const Node* root) {
    auto [it, fresh] = root_storage.emplace(root, static_cast<int>(storages.size()));
    if (fresh) {
      Storage s;
      s.bytes = root->meta().is_tensor() ? value_nbytes(root->meta()) : 0;
      storages.push_back(s);
    }
    return it->second;
  };
  size_t pos = 0;
  for (const Node* n : fw.nodes()) {
    size_t i = pos++;
    if (!is_step(n)) continue;
    int64_t step = static_cast<int64_t>(t.steps.size());
    step_of[n] = step;
    t.steps.push_back({n->name(), false, 0});
    if (fw_inputs[i] >= 0 || fw_roots[i]->kind() == NodeKind::Placeholder) continue;
    storage_of[n] = storage_for(fw_roots[i]);
  }
  t.num_forward_steps = t.steps.size();
  auto extend = [&](const Graph& g) {
    for (const Node* n : g.nodes()) {
      auto it = storage_of.find(n);
      if (it == storage_of.end()) continue;
      Storage& s = storages[it->second];
      if (auto st = step_of.find(n); st != step_of.end()) s.touch(st->second);
      for (const Node* u : n->users())
        if (auto su = step_of.find(u); su != step_of.end()) s.touch(su->second);
    }
  };
  extend(fw);
  // bw: saved placeholders continue their fw storage; fresh values get their own.
  for (const Node* p : bw.placeholders()) {
    if (!saved_set.count(p->name())) continue;
    const Node* f = fw.find(p->name());
    AOTGRAD_CHECK(f, "activation timeline: saved value '", p->name(),
                  "' is not a node of the forward graph");
    if (auto it = storage_of.find(f); it != storage_of.end()) storage_of[p] = it->second;
  }
  std::vector<const Node*> bw_roots = storage_roots(bw);
  pos = 0;
  for (const Node* n : bw.nodes()) {
    size_t i = pos++;
    if (!is_step(n)) continue;
    step_of[n] = static_cast<int64_t>(t.steps.size());
    t.steps.push_back({n->name(), true, 0});
    const Node* root = bw_roots[i];
    if (root->kind() == NodeKind::Placeholder) {
      if (auto it = storage_of.find(root); it != storage_of.end()) storage_of[n] = it->second;
      continue;  // a view of a tangent (or of an input) is not an activation
    }
    storage_of[n] = storage_for(root);
  }
  extend(bw);
  for (const Storage& s : storages)
    for (int64_t k = std::max<int64_t>(s.first, 0); s.first >= 0 && k <= s.last; ++k)
      t.steps[k].live_bytes += s.bytes;
  for (const TimelineStep& s : t.steps) t.peak_bytes = std::max(t.peak_bytes, s.live_bytes);
  return t;
}

}  // namespace aotgrad

// aotgrad: arguments that alias each other -- written duplicates merged, synthetic bases (§13.23,
// §13.24).
#include "aotgrad/runtime/wrappers/synthetic_base.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/generated/Functions.h>
#include <torch/csrc/autograd/variable.h>

#include <unordered_set>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"

namespace aotgrad {
namespace {

// The byte range a tensor's elements can touch in its storage: [begin, end).
std::pair<int64_t, int64_t> byte_range(const at::Tensor& t) {
  if (t.numel() == 0) return {0, 0};
  int64_t last = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  int64_t es = static_cast<int64_t>(t.element_size());
  return {t.storage_offset() * es, (last + 1) * es};
}

Arg int_list(c10::IntArrayRef v) { return Arg::of_ints(std::vector<int64_t>(v.begin(), v.end())); }

std::string positions_text(const std::vector<int>& positions) {
  std::string s;
  for (size_t k = 0; k < positions.size(); ++k)
    s += (k == 0 ? "" : k + 1 == positions.size() ? " and " : ", ") + std::to_string(positions[k]);
  return s;
}

// Calls `visit` with the storage offset of each element of a strided geometry, in row-major
// order; stops early when `visit` returns false. Returns whether it visited every element.
template <typename Visit>
bool each_offset(int64_t storage_offset, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                 Visit visit) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t k = 0; k < numel; ++k) {
    int64_t at = storage_offset;
    for (size_t d = 0; d < sizes.size(); ++d) at += index[d] * strides[d];
    if (!visit(at)) return false;
    for (size_t d = sizes.size(); d-- > 0 && ++index[d] == sizes[d];) index[d] = 0;
  }
  return true;
}

// Whether a view of `t`'s storage with geometry `v` reaches storage `t`'s elements do not cover
// (conservatively true where that is not known, or too costly to find out).
bool reaches_past(const at::Tensor& t, const InputMutations::AbsoluteView& v) {
  if (!v.known || v.storage_offset < 0 || v.sizes.size() != v.strides.size()) return true;
  int64_t numel = 1, last = v.storage_offset;
  for (size_t d = 0; d < v.sizes.size(); ++d) {
    numel *= v.sizes[d];
    last += (v.sizes[d] - 1) * v.strides[d];
  }
  if (numel == 0) return false;
  if (t.is_non_overlapping_and_dense())  // its elements: one range of the storage
    return v.storage_offset < t.storage_offset() || last >= t.storage_offset() + t.numel();
  constexpr int64_t kMaxElements = int64_t{1} << 20;
  if (t.numel() > kMaxElements || numel > kMaxElements) return true;
  std::unordered_set<int64_t> covered;
  each_offset(t.storage_offset(), t.sizes(), t.strides(), [&](int64_t at) {
    covered.insert(at);
    return true;
  });
  return !each_offset(v.storage_offset, v.sizes, v.strides,
                      [&](int64_t at) { return covered.count(at) > 0; });
}

}  // namespace

bool overlapping_views(const at::Tensor& a, const at::Tensor& b) {
  if (!a.has_storage() || !b.has_storage() || !a.storage().is_alias_of(b.storage())) return false;
  auto [a0, a1] = byte_range(a);
  auto [b0, b1] = byte_range(b);
  return a0 < b1 && b0 < a1;
}

std::optional<WrittenOverlap> find_written_overlap(const std::vector<at::Tensor>& args,
                                                   const std::function<bool(size_t)>& written) {
  for (size_t a = 0; a < args.size(); ++a)
    for (size_t b = 0; b < a; ++b) {
      if (!overlapping_views(args[a], args[b])) continue;
      for (size_t w : {b, a})
        if (written(w)) return WrittenOverlap{b, a, w};
    }
  return std::nullopt;
}

bool AliasPlan::empty() const {
  for (int d : duplicate_of)
    if (d >= 0) return false;
  return bases.empty();
}

std::string AliasPlan::key() const {
  std::string k;
  for (size_t i = 0; i < duplicate_of.size(); ++i)
    if (duplicate_of[i] >= 0)
      k += "d" + std::to_string(i) + "=" + std::to_string(duplicate_of[i]) + ";";
  for (const auto& g : bases) {
    k += "b";
    for (int i : g) k += std::to_string(i) + ",";
    k += ";";
  }
  return k;
}

bool strided_past_its_view(const at::Tensor& t) {
  if (!t.defined() || !t.requires_grad() || !t.is_view()) return false;
  const auto* node =
      dynamic_cast<const torch::autograd::generated::AsStridedBackward0*>(t.grad_fn().get());
  if (!node) return false;
  const at::TensorGeometry& in = node->self_geometry;
  // Each of t's elements among the view's (a large view is taken to reach past: a synthetic base
  // is right either way, only dearer).
  constexpr int64_t kMaxElements = int64_t{1} << 20;
  if (in.numel() > kMaxElements || t.numel() > kMaxElements) return true;
  std::unordered_set<int64_t> covered;
  each_offset(in.storage_offset(), in.sizes(), in.strides(), [&](int64_t at) {
    covered.insert(at);
    return true;
  });
  return !each_offset(t.storage_offset(), t.sizes(), t.strides(),
                      [&](int64_t at) { return covered.count(at) > 0; });
}

AliasPlan plan_aliasing(const std::vector<const at::Tensor*>& args, const InputMutations& mut,
                        bool training) {
  AliasPlan plan;
  const size_t n = args.size();
  plan.duplicate_of.assign(n, -1);
  auto mutated = [&](size_t i) {
    return i < mut.data_mutated.size() && (mut.data_mutated[i] || mut.metadata_mutated[i]);
  };
  auto tensor = [&](size_t i) -> const at::Tensor* {
    return args[i] && args[i]->defined() ? args[i] : nullptr;
  };
  // Identical tensors: merged only when one of them is mutated (§13.24).
  for (size_t j = 0; j < n; ++j) {
    const at::Tensor* tj = tensor(j);
    if (!tj) continue;
    for (size_t i = 0; i < j; ++i) {
      const at::Tensor* ti = tensor(i);
      if (ti && plan.duplicate_of[i] < 0 &&
          ti->unsafeGetTensorImpl() == tj->unsafeGetTensorImpl() && (mutated(i) || mutated(j))) {
        plan.duplicate_of[j] = static_cast<int>(i);
        break;
      }
    }
  }
  // Distinct views of one storage: a synthetic base when one is mutated and some overlap (§13.23).
  std::vector<bool> grouped(n);
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor* ti = tensor(i);
    if (!ti || grouped[i] || plan.duplicate_of[i] >= 0 || !ti->has_storage()) continue;
    std::vector<int> group{static_cast<int>(i)};
    for (size_t j = i + 1; j < n; ++j) {
      const at::Tensor* tj = tensor(j);
      if (!tj || plan.duplicate_of[j] >= 0 || !tj->has_storage()) continue;
      if (tj->unsafeGetTensorImpl() == ti->unsafeGetTensorImpl())
        continue;  // unmutated duplicate: kept
      if (tj->storage().unsafeGetStorageImpl() == ti->storage().unsafeGetStorageImpl())
        group.push_back(static_cast<int>(j));
    }
    if (group.size() < 2) continue;
    // Only data mutations need a base: a metadata mutation changes one tensor, not the storage.
    bool any_mutated = false, any_overlap = false;
    for (int a : group) any_mutated = any_mutated || mut.data_mutated.at(a);
    for (size_t x = 0; x < group.size(); ++x)
      for (size_t y = x + 1; y < group.size(); ++y)
        any_overlap = any_overlap || overlapping_views(*tensor(group[x]), *tensor(group[y]));
    if (!any_mutated || !any_overlap) continue;
    for (int a : group) {
      grouped[a] = true;
      AOTGRAD_CHECK(!mut.metadata_mutated.at(a), "argument ", a,
                    " overlaps another argument that the graph writes, and the graph changes its "
                    "metadata (t_, transpose_, ...): not supported with a synthetic base (clone "
                    "one of them)");
      AOTGRAD_CHECK(tensor(a)->scalar_type() == ti->scalar_type(), "arguments ", i, " and ", a,
                    " are overlapping views of one storage with different dtypes; aotgrad cannot "
                    "give them a synthetic base (clone one of them)");
    }
    plan.bases.push_back(group);
  }
  // An input the graph writes and views by as_strided past its own elements: eagerly those reads
  // and writes reach the caller's storage there, which the graph has only through a base (a
  // synthetic base of the inputs of that storage; functionalization alone sees each input's
  // elements). In training also a written input that is itself as_strided past its view: the
  // gradient of its old value reaches the base there only through a base. Not where they differ in
  // dtype or one's metadata changes (the groups above raise).
  for (size_t i = 0; i < n && i < mut.absolute_views.size(); ++i) {
    const at::Tensor* t = tensor(i);
    if (!t || grouped[i] || plan.duplicate_of[i] >= 0 || !t->has_storage() ||
        !mut.data_mutated.at(i))
      continue;
    bool past = training && strided_past_its_view(*t);
    for (const InputMutations::AbsoluteView& v : mut.absolute_views[i])
      past = past || reaches_past(*t, v);
    if (!past) continue;
    std::vector<int> group;
    bool able = true;
    for (size_t j = 0; j < n; ++j) {
      const at::Tensor* tj = tensor(j);
      if (!tj || plan.duplicate_of[j] >= 0 || !tj->has_storage() ||
          tj->storage().unsafeGetStorageImpl() != t->storage().unsafeGetStorageImpl())
        continue;
      able = able && !grouped[j] && !mut.metadata_mutated.at(j) &&
             tj->scalar_type() == t->scalar_type();
      group.push_back(static_cast<int>(j));
    }
    if (!able) continue;
    for (int a : group) grouped[a] = true;
    plan.bases.push_back(group);
  }
  return plan;
}

at::Tensor synthetic_base(const std::vector<at::Tensor>& group, const std::vector<int>& positions,
                          bool differentiable) {
  AOTGRAD_CHECK(!group.empty(), "synthetic_base: an empty group");
  const at::Tensor& any = group[0];
  bool any_requires_grad = false;
  for (const at::Tensor& t : group) any_requires_grad = any_requires_grad || t.requires_grad();
  if (differentiable) {
    // PyTorch's _are_differentiable_views: every view's _base is one tensor, or is that tensor.
    const at::TensorBase* base = nullptr;
    for (const at::Tensor& t : group)
      if (t.is_view()) {
        base = &t._base();
        break;
      }
    bool common = base != nullptr;
    for (const at::Tensor& t : group) {
      const at::TensorImpl* root =
          t.is_view() ? t._base().unsafeGetTensorImpl() : t.unsafeGetTensorImpl();
      common = common && root == base->unsafeGetTensorImpl();
    }
    if (common) {
      AOTGRAD_CHECK(!any_requires_grad || base->requires_grad(), "arguments ",
                    positions_text(positions),
                    " are overlapping views of one tensor that the function writes, and one of "
                    "them requires grad while their base does not: its gradient could not reach "
                    "it through the synthetic base");
      AOTGRAD_CHECK(base->storage_offset() == 0 && base->is_non_overlapping_and_dense(),
                    "arguments ", positions_text(positions),
                    " are overlapping views of a base that is not dense from the start of its "
                    "storage (sizes ",
                    base->sizes(), ", strides ", base->strides(), ", storage offset ",
                    base->storage_offset(), "); aotgrad cannot regenerate them from it");
      return at::Tensor(*base);
    }
    AOTGRAD_CHECK(!any_requires_grad, "arguments ", positions_text(positions),
                  " share a storage and overlap, the function writes one of them and they "
                  "require grad, but autograd does not know them as views of one base (no "
                  "common _base): aot_autograd does not handle non-differentiable view input "
                  "mutations; pass their base instead, or clone one of them");
  }
  const int64_t numel = static_cast<int64_t>(any.storage().nbytes() / any.element_size());
  at::Tensor base = at::empty({0}, any.options()).set_(any.storage(), 0, {numel}, {1});
  // A write into the base is a write into the caller's tensors: it moves the version counter of
  // the first view (which views of one tensor share), as eager's write would.
  torch::autograd::impl::set_version_counter(base, torch::autograd::impl::version_counter(any));
  return base;
}

MergedInputs merge_view_inputs(const Graph& graph, const AliasPlan& plan,
                               const std::vector<const at::Tensor*>& args, bool differentiable,
                               const std::vector<int>& positions) {
  MergedInputs r;
  r.inputs.groups = plan.bases;
  r.inputs.differentiable = differentiable;
  const std::vector<at::Tensor> bases = r.inputs.bases(args, positions);
  std::shared_ptr<Graph> g = graph.clone();
  std::vector<Node*> phs = g->placeholders();
  AOTGRAD_CHECK(phs.size() == args.size() && plan.duplicate_of.size() == args.size(),
                "merge_view_inputs: ", args.size(), " arguments for ", phs.size(), " placeholders");
  Node* first_body = phs.empty() ? g->output() : phs.back()->next();
  std::vector<bool> removed(phs.size());
  for (size_t j = 0; j < phs.size(); ++j) {
    if (plan.duplicate_of[j] < 0) continue;
    g->replace_all_uses_with(phs[j], phs[plan.duplicate_of[j]]);
    removed[j] = true;
  }
  std::vector<Node*> base_nodes;
  for (size_t b = 0; b < plan.bases.size(); ++b) {
    Node* base =
        g->add_placeholder(g->unique_name("base"), ValueMeta::of(tensor_meta_of(bases[b])));
    base_nodes.push_back(base);
    g->set_insertion_point(first_body);
    for (int a : plan.bases[b]) {
      const at::Tensor& t = *args[a];
      Node* view = g->add_call(
          aten_ops().get("aten::as_strided"),
          {Arg(base), int_list(t.sizes()), int_list(t.strides()), Arg::of_int(t.storage_offset())});
      g->replace_all_uses_with(phs[a], view);
      removed[a] = true;
    }
    g->set_insertion_point(nullptr);
  }
  for (size_t j = 0; j < phs.size(); ++j) {
    if (removed[j])
      g->erase(phs[j]);
    else
      r.inputs.sources.push_back(static_cast<int>(j));
  }
  for (size_t b = 0; b < base_nodes.size(); ++b)
    r.inputs.sources.push_back(-1 - static_cast<int>(b));
  r.graph = std::move(g);
  return r;
}

std::vector<at::Tensor> SyntheticBaseInputs::bases(const std::vector<const at::Tensor*>& tensors,
                                                   const std::vector<int>& positions) const {
  std::vector<at::Tensor> out;
  out.reserve(groups.size());
  for (const std::vector<int>& group : groups) {
    std::vector<at::Tensor> views;
    std::vector<int> named;
    for (int k : group) {
      views.push_back(*tensors[k]);
      named.push_back(positions.empty() ? k : positions[k]);
    }
    out.push_back(synthetic_base(views, named, differentiable));
  }
  return out;
}

}  // namespace aotgrad

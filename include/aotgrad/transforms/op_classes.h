// aotgrad: the op classes the min-cut partitioner reasons with (torch/_functorch/partitioners.py's
// OpTypes and get_default_op_list).
#pragma once

#include <string>
#include <string_view>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Which ops the partitioner may recompute, fuse, or must treat specially: PyTorch's classes
/// (OpTypes), read from each op's tags (ir/op.h's recompute classes), declared with the op or, for
/// ops the registry does not declare, given by its provider (OpTable::tag_provided). A getitem
/// counts as recomputable and fusible (operator.getitem is in PyTorch's allowlist); placeholders
/// and the output are in no class.
class OpClasses {
 public:
  /// PyTorch's default classes (compiler="inductor"), as the ops' tags give them.
  static const OpClasses& defaults();

  /// Recomputable or random: ops a fusing backend would fuse into neighbours.
  bool is_fusible(const Node& n) const;
  /// Tagged compute_intensive: mm, addmm, bmm, convolution, convolution_backward, attention
  /// kernels, upsample_bilinear2d, ...
  bool is_compute_intensive(const Node& n) const;
  /// Tagged random or nondeterministic_seeded: native_dropout, rand_like, randn_like, ...
  bool is_random(const Node& n) const;
  /// Tagged view_op: the view ops of PyTorch's list (view, t, permute, expand, slice, select,
  /// squeeze, ...); an op the registry does not declare, when its provider tagged it view.
  bool is_view(const Node& n) const;
  /// The recomputable allowlist, never a random op: tagged recomputable (cheap reductions, casts,
  /// copies, factories) or view_op, or a pointwise op that is not in-place.
  bool is_recomputable(const Node& n) const;
  /// An elementwise computation: a call of an op tagged `pointwise` (declared, or tagged by its
  /// provider) that is neither in-place nor random (silu, gelu, mul, add, where, ...). Casts and
  /// copies (_to_copy, clone) carry no such tag.
  bool is_pointwise(const Node& n) const;
  /// A functional collective or its wait (tag `collective`): never recomputed (ban reason
  /// "collective"), whatever else its tags say -- except a re-gather.
  bool is_collective(const Node& n) const;
  /// A sharded parameter's gather: an all_gather_into_tensor of a graph input, or the wait_tensor
  /// of one. Under a recompute tag (FSDP's reshard_after_forward, Note [Sharded parameters]) the
  /// backward issues it again instead of saving the gathered parameter: every rank holds the
  /// input, so the re-gather is communication, not a second issue of a forward collective.
  static bool is_regather(const Node& n);
  /// Tagged normalization: a normalization's forward (native_batch_norm,
  /// _native_batch_norm_legit_functional, native_layer_norm, native_group_norm): a memory-bound
  /// reduction and pointwise pass that
  /// MinCutOptions::recompute_norms_from_saved may run again in the backward.
  bool is_normalization(const Node& n) const;
  /// An op the registry does not declare that no class takes (not pointwise, random, compute
  /// intensive, recomputable or a view): the partitioner bans it with the reason "unknown op
  /// class".
  bool is_unknown(const Node& n) const;

  /// The overload packet of a call ("aten::add"); "getitem", "placeholder" or "output" otherwise.
  static std::string_view packet(const Node& n);
};

}  // namespace aotgrad

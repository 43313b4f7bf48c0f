// aotgrad: what a user tells aotgrad about their own ops (§13.28 register_fake, §13.35 a
// backend's decompositions), without rebuilding aotgrad.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "aotgrad/ir/op.h"

namespace aotgrad {

// Note [Custom ops]
// A C++ user defines an op with libtorch's TORCH_LIBRARY (schema and CPU kernel); the op world's
// provider (providers/dispatcher_ops.h) then makes it an op of aotgrad like any ATen op: metadata
// from its Meta kernel or its CPU kernel run on zeros, a derivative traced through the Autograd
// kernel the user registered (an autograd::Function), a decomposition traced from a
// CompositeImplicitAutograd kernel. What libtorch cannot say, the user says here, before the op's
// first use in the process: a meta function (metadata without running the kernel: PyTorch's
// register_fake), a derivative (a derivatives.yaml formula, ops/formula.h, or C++), a
// decomposition into other ops (applied where the graph's decomposition table names the op, and
// in the core and full tables when its Decomposition::tables include kCoreTable), extra tags
// (kPointwise lets the partitioner recompute it). Facts given here replace libtorch's.

/// What aotgrad should know about an op beyond its libtorch schema. Every field is optional.
struct CustomOpFacts {
  MetaFn meta = nullptr;
  std::shared_ptr<const DerivativeRule> derivative;
  /// No derivative: a gradient asked of it is an error naming the op.
  bool non_differentiable = false;
  std::shared_ptr<const Decomposition> decomposition;
  uint32_t tags = 0;  // added to what the schema and dispatcher say
};

/// Registers facts for `name` ("mylib::scaled_tanh" or "mylib::scaled_tanh.overload"). Throws
/// Error when the name has no namespace, is an op the registry declares, was already given to a
/// graph (facts must come before the op's first use), was registered before, or says nothing.
/// Thread-safe.
void register_custom_op(const std::string& name, CustomOpFacts facts);

/// torch.library._register_effectful_op: marks `name` ("mylib::log" or "mylib::log.overload", an
/// op of the user's TORCH_LIBRARY) effectful with an ordered effect, so that functionalization
/// threads an effect token through its calls and no pass drops, merges, recomputes or reorders
/// them (Note [Effect tokens]). Same rules as register_custom_op (before first use, once; not an
/// op the registry declares, which declares its effects itself); may be combined with it.
void register_effectful_op(const std::string& name);
/// Whether `name` was registered with register_effectful_op.
bool registered_effectful(const std::string& name);

/// The facts registered for `name` (the full name without ".default"), or nullptr.
const CustomOpFacts* custom_op_facts(const std::string& name);

/// Applies the registered facts of `op` (if any) to it; op providers call it on what they give.
void apply_custom_op_facts(OpDef& op);

}  // namespace aotgrad

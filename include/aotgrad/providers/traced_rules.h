// aotgrad: derivatives and decompositions of provided ops, traced through libtorch on fake tensors.
#pragma once

#include <memory>

#include "aotgrad/ops/decomposition.h"
#include "aotgrad/ops/derivative.h"

namespace aotgrad {

/// The derivative rule of ops the registry does not declare: the op is run under libtorch's
/// autograd on fake tensors (fake_tensor.h) standing for the forward call's inputs, its grad_fn is
/// applied to fake gradients, and the backward ops it runs are recorded, then copied into the joint
/// graph with the fakes replaced by the call's inputs, results and incoming gradients. Traced once
/// per op, argument metadata and which inputs need gradients; the copies are cached. An op libtorch
/// cannot differentiate is an Error naming the op, its schema and the inputs that needed a
/// gradient.
std::shared_ptr<const DerivativeRule> traced_derivative();

/// The decomposition of CompositeImplicitAutograd ops the registry does not declare: the op's
/// composite kernel run on fake tensors, the ops it calls recorded (cached per op and argument
/// metadata). In the `core` and `full` tables, as a declared composite op's decomposition is.
std::shared_ptr<const Decomposition> traced_decomposition();

}  // namespace aotgrad

// aotgrad: which values need gradients, and whether a compilation is autograd or inference
// (§13.11).
#pragma once

#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Per node (by position in g.nodes()): whether its value requires grad, given which placeholders
/// do. A call's tensor results require grad when the op is differentiable, the result is floating
/// point or complex, and some tensor argument requires grad; a written argument requires grad after
/// the write if the written value does.
std::vector<bool> propagate_requires_grad(const Graph& g,
                                          const std::vector<bool>& input_requires_grad);

/// §13.11: autograd when some input requires grad and some output requires grad, a
/// grad-requiring input is mutated, or an input is written with a value that requires grad (it
/// gains the write's history); otherwise inference.
bool needs_autograd(const Graph& g, const std::vector<bool>& input_requires_grad);

}  // namespace aotgrad

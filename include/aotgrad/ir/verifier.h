// aotgrad: checks a Graph's structural invariants and its metadata against the op registry.
#pragma once

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Checks: placeholders first and one output last; every argument defined before use and owned by
/// this graph; unique names; use lists consistent; each call's arguments fit its schema; each
/// getitem indexes a tuple in range; each node's recorded metadata equals what the registry infers.
/// Throws Error naming the node and op (with the node's source position when it was parsed).
void verify(const Graph& g);

}  // namespace aotgrad

// aotgrad: checks a Graph's structural invariants and its metadata against the op registry.
#pragma once

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// What verify checks. kStructure: placeholders first and one output last; every argument defined
/// before use and owned by this graph; unique names; use lists consistent; each call's arguments
/// fit its schema; each getitem indexes a tuple in range and has its element's metadata. kFull
/// also re-infers each call's metadata with the registry and compares it with the recorded one,
/// which costs a meta function call per node.
enum class VerifyLevel { kStructure, kFull };

/// Checks `g` at `level`. Throws Error naming the node and op (with the node's source position
/// when it was parsed).
void verify(const Graph& g, VerifyLevel level = VerifyLevel::kFull);

}  // namespace aotgrad

// aotgrad: an argument of a graph's node rewritten onto a copy's nodes (the passes that rebuild a
// graph: the pass manager, autograd, RNG functionalization, the memory schedule).
#pragma once

#include <unordered_map>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// `a` with every node it names (in lists too) replaced by its copy in `map`; throws
/// std::out_of_range for a node without one.
inline Arg remap(const Arg& a, const std::unordered_map<const Node*, Node*>& map) {
  if (a.is_node()) return Arg(map.at(a.node));
  if (a.is_list()) {
    Arg out = a;
    for (Arg& e : out.list) e = remap(e, map);
    return out;
  }
  return a;
}

}  // namespace aotgrad

// aotgrad: what the units of aotgrad._C (src/python) share.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Graph: an aotgrad graph held for Python.
struct PyGraph {
  std::shared_ptr<Graph> graph;
};

/// aotgrad._C.compile and CompiledFunction: a forward graph compiled by aotgrad's whole pipeline
/// and run on its runtime inside libtorch's autograd (src/python/compiled.cc).
void bind_compiled(pybind11::module_& m);

}  // namespace aotgrad

// aotgrad: what the units of aotgrad._C (src/python) share.
#pragma once

#include <pybind11/pybind11.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Graph: an aotgrad graph held for Python.
struct PyGraph {
  std::shared_ptr<Graph> graph;
};

class GraphBuilder;

/// An argument in aotgrad.fx's encoding (Note [FX graphs cross node by node]) as an Arg; node
/// references are looked up in `nodes`, the graph so far (src/python/module.cc).
Arg decode_encoded(const pybind11::handle& v, const GraphBuilder& nodes);

/// The op named `qualified` ("aten::add") with overload `overload` ("Tensor", "default", ""); an
/// Error for an op aotgrad does not know (src/python/module.cc).
const OpDef& find_op(const std::string& qualified, const std::string& overload);

/// `parsed`'s value made an Arg by `make`, else an Error naming the unknown `what` ("layout").
template <class T, class Make>
Arg known(const std::optional<T>& parsed, Make make, const char* what, const std::string& s) {
  if (!parsed) throw Error(std::string("aotgrad has no ") + what + " '" + s + "'");
  return make(*parsed);
}

/// A call's given arguments as FX writes them: the schema's positional ones, then its keyword-only
/// ones by name, each made a Python value by `value` (src/python/module.cc).
std::pair<pybind11::list, pybind11::dict> call_arguments(
    const Node& n, const std::function<pybind11::object(const Arg&)>& value);

/// aotgrad._C.from_fx: an FX graph walked in C++ (src/python/from_fx.cc).
void bind_from_fx(pybind11::module_& m);
/// aotgrad._C.to_fx: an aotgrad graph built back into an FX graph in C++ (src/python/to_fx.cc).
void bind_to_fx(pybind11::module_& m);

/// aotgrad._C.compile and CompiledFunction: a forward graph compiled by aotgrad's whole pipeline
/// and run on its runtime inside libtorch's autograd (src/python/compiled.cc).
void bind_compiled(pybind11::module_& m);

}  // namespace aotgrad

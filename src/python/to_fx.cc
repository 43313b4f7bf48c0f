// aotgrad._C.to_fx: an aotgrad graph built back into a torch.fx Graph in C++ (aotgrad.fx.to_fx):
// each node by Graph.create_node, its arguments made Python values as they are read, each op's
// OpOverload looked up once per op, and `meta["val"]` taken from the values given by name.
#include <torch/csrc/Device.h>
#include <torch/csrc/DynamicTypes.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/utils/tensor_memoryformats.h>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/python/bindings.h"

namespace py = pybind11;

namespace aotgrad {
namespace {

class FxBuild {
 public:
  // kinds: (torch.fx.Graph, operator.getitem, aotgrad.fx._target).
  FxBuild(const py::tuple& kinds, py::dict vals)
      : fx_(kinds[0]()),
        create_node_(fx_.attr("create_node")),
        getitem_(kinds[1]),
        target_(kinds[2]),
        vals_(std::move(vals)) {}

  py::object build(const Graph& g, bool syms_first) {
    std::vector<const Node*> order;
    for (const Node* n : g.nodes()) order.push_back(n);
    if (syms_first)
      std::stable_partition(order.begin(), order.end(), [](const Node* n) {
        return n->kind() == NodeKind::Placeholder && n->meta().kind == ValueMeta::Kind::SymInt;
      });
    py::str call_function("call_function");
    for (const Node* n : order) {
      py::str name(n->name());
      py::object node;
      switch (n->kind()) {
        case NodeKind::Placeholder:
          node = create_node_(py::str("placeholder"), name, py::tuple(), py::dict(), name);
          break;
        case NodeKind::GetItem:
          node = create_node_(call_function, getitem_,
                              py::make_tuple(env_.at(n->getitem_input()), n->getitem_index()),
                              py::dict(), name);
          break;
        case NodeKind::Call: {
          auto [args, kwargs] = call_arguments(*n, [this](const Arg& a) { return value(a); });
          node = create_node_(call_function, target(*n->op()), py::tuple(args), kwargs, name);
          break;
        }
        case NodeKind::Output: {
          const Arg& out = n->args()[0];
          py::object v = value(out);
          fx_.attr("output")(out.kind == Arg::Kind::List ? py::tuple(v) : v);
          continue;
        }
      }
      if (vals_.contains(name)) node.attr("meta")[py::str("val")] = vals_[name];
      env_.emplace(n, node);
    }
    return fx_;
  }

 private:
  py::object target(const OpDef& op) {
    auto it = targets_.find(&op);
    if (it != targets_.end()) return it->second;
    py::object t = target_(op.schema.qualified_name());
    targets_.emplace(&op, t);
    return t;
  }

  py::object value(const Arg& a) {
    switch (a.kind) {
      case Arg::Kind::None: return py::none();
      case Arg::Kind::Node: return env_.at(a.node);
      case Arg::Kind::Int: return py::int_(a.i);
      case Arg::Kind::Float: return py::float_(a.f);
      case Arg::Kind::Bool: return py::bool_(a.i != 0);
      case Arg::Kind::Str: return py::str(a.str);
      case Arg::Kind::Dtype:
        return py::reinterpret_borrow<py::object>(
            reinterpret_cast<PyObject*>(torch::getTHPDtype(to_c10(static_cast<ScalarType>(a.i)))));
      case Arg::Kind::Device:
        return py::reinterpret_steal<py::object>(THPDevice_New(to_c10(a.device)));
      case Arg::Kind::Layout:
        return py::reinterpret_borrow<py::object>(
            reinterpret_cast<PyObject*>(torch::getTHPLayout(to_c10(static_cast<Layout>(a.i)))));
      case Arg::Kind::List: {
        py::list l;
        for (const Arg& e : a.list) l.append(value(e));
        return l;
      }
      case Arg::Kind::Tuple: {
        py::list l;
        for (const Arg& e : a.list) l.append(value(e));
        return py::tuple(l);
      }
      case Arg::Kind::MemoryFormat:
        return py::reinterpret_borrow<py::object>(
            torch::utils::getTHPMemoryFormat(to_c10(static_cast<MemoryFormat>(a.i))));
      case Arg::Kind::Op: return target(*a.op);
      case Arg::Kind::Graph: break;
    }
    throw Error("a subgraph argument ('" + a.str + "') does not cross into Python yet");
  }

  py::object fx_, create_node_, getitem_, target_;
  py::dict vals_;
  std::unordered_map<const Node*, py::object> env_;
  std::unordered_map<const OpDef*, py::object> targets_;
};

}  // namespace

void bind_to_fx(py::module_& m) {
  m.def(
      "to_fx",
      [](const PyGraph& g, const py::dict& vals, bool syms_first, const py::tuple& kinds) {
        return FxBuild(kinds, vals).build(*g.graph, syms_first);
      },
      py::arg("graph"), py::arg("vals"), py::arg("syms_first"), py::arg("kinds"),
      "A torch.fx Graph of an aotgrad graph, built in C++ (aotgrad.fx.to_fx).");
}

}  // namespace aotgrad

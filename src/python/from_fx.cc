// aotgrad._C.from_fx: a torch.fx Graph walked in C++ into aotgrad's IR (Note [FX graphs cross node
// by node], src/python/module.cc). The same crossing as aotgrad.fx's node-by-node GraphBuilder
// calls, without a Python step per node: a fake tensor's metadata is read from its at::Tensor
// (dtype, device, symbolic sizes, strides and storage offset), an argument becomes an Arg as it is
// read, and each op's OpDef is looked up once per target. The metadata of a SymFloat, a SymBool or
// a tensor that is not strided comes from its annotation (aotgrad.fx.annotation, in `kinds`).
#include <torch/csrc/Device.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/Layout.h>
#include <torch/csrc/MemoryFormat.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/utils/python_symnode.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/python/bindings.h"
#include "aotgrad/python/graph_builder.h"

namespace py = pybind11;

namespace aotgrad {
namespace {

// A node aotgrad's IR cannot hold: aotgrad.fx.UnsupportedNode in Python.
class UnsupportedNode : public Error {
 public:
  using Error::Error;
};

class FxWalk {
 public:
  // kinds: (torch.fx.Node, torch._ops.OpOverload, operator.getitem, {operator.add:
  // "operator::add", ...}, aotgrad.fx.annotation).
  FxWalk(GraphBuilder& b, const py::tuple& kinds)
      : b_(b),
        node_type_(kinds[0]),
        overload_type_(kinds[1]),
        getitem_(kinds[2]),
        sym_ops_(kinds[3].cast<py::dict>()),
        annotation_(kinds[4]) {}

  void walk(const py::handle& graph) {
    // A list first: iterating the node list in place can repeat nodes under pybind11.
    for (const py::handle& n : py::list(graph.attr("nodes"))) node(n);
  }

 private:
  // The attribute names and keys read per node, interned once: a lookup by an interned string
  // neither makes the string nor hashes it.
  static py::str interned(const char* s) {
    return py::reinterpret_steal<py::str>(PyUnicode_InternFromString(s));
  }

  void node(const py::handle& n) {
    std::string name = py::str(n.attr(k_name_));
    std::string op = py::str(n.attr(k_op_));
    std::string where = "node '" + name + "'";
    py::object target = n.attr(k_target_);
    py::dict meta = n.attr(k_meta_);
    PyObject* found = PyDict_GetItemWithError(meta.ptr(), k_val_.ptr());
    if (!found && PyErr_Occurred()) throw py::error_already_set();
    py::object val = found ? py::reinterpret_borrow<py::object>(found) : py::none();
    py::tuple args = n.attr(k_args_);
    if (op == "placeholder") {
      std::optional<ValueMeta> m = meta_of(val, name);
      if (!m) throw UnsupportedNode(where + ": a placeholder without a tensor or SymInt value");
      objects_[n.ptr()] = b_.placeholder(name, std::move(*m));
    } else if (op == "call_function" && target.is(getitem_)) {
      Node* in = input(args[0], where);
      objects_[n.ptr()] = b_.getitem(name, in, args[1].cast<int64_t>(), meta_of(val, name));
    } else if (op == "call_function" && py::isinstance(target, overload_type_)) {
      const OpDef& def = op_of(target, where);
      std::vector<Arg> positional;
      std::vector<std::pair<std::string, Arg>> named;
      try {
        for (const py::handle& a : args) positional.push_back(arg(a, where));
        for (auto [k, v] : py::dict(n.attr(k_kwargs_)))
          named.emplace_back(k.cast<std::string>(), arg(v, where));
      } catch (const UnsupportedNode&) {
        throw;
      } catch (const Error& e) {
        throw Error(where + " (" + def.name + "): " + e.message());
      }
      as_tensors(def, positional, named);
      objects_[n.ptr()] =
          b_.call(name, def, std::move(positional), std::move(named), meta_of(val, name));
    } else if (op == "call_function" && sym_ops_.contains(target)) {
      const OpDef& def = aten_ops().get(py::str(sym_ops_[target]).cast<std::string>());
      std::vector<Arg> positional;
      for (const py::handle& a : args) positional.push_back(arg(a, where));
      objects_[n.ptr()] = b_.call(name, def, std::move(positional), {}, meta_of(val, name));
    } else if (op == "output") {
      py::handle out = args[0];
      Arg a = arg(out, where);
      if (py::isinstance<py::tuple>(out)) a = Arg::of_tuple(std::move(a.list));
      b_.output(std::move(a));
      return;
    } else {
      py::object tname = py::getattr(target, "__name__", target);
      throw UnsupportedNode(where + ": " + op + " " + py::repr(tname).cast<std::string>() +
                            " is not an ATen op aotgrad takes");
    }
    PyObject* policy_found = PyDict_GetItemWithError(meta.ptr(), k_recompute_.ptr());
    if (!policy_found && PyErr_Occurred()) throw py::error_already_set();
    if (policy_found && op == "call_function" && !target.is(getitem_)) {
      py::handle policy = policy_found;
      py::object text = py::getattr(policy, "name", py::none());
      b_.recompute(name, py::str(text.is_none() ? py::str(policy) : text));
    }
  }

  // Note [A SymInt where a Tensor goes]
  // FX writes `x * x.shape[0]` as mul.Tensor(x, sym_size_int): PyTorch's argument parser makes the
  // SymInt a wrapped-number tensor. aotgrad's IR takes a Tensor argument only as a tensor or a
  // literal number, so the walk puts the SymInt into a 0-dim int64 tensor first (scalar_tensor,
  // once per SymInt). Type promotion agrees with a wrapped number's wherever a tensor with
  // dimensions takes part; where it would not (every operand 0-dim), the verifier names the node:
  // the fake value's dtype against the inferred one.
  void as_tensors(const OpDef& def, std::vector<Arg>& positional,
                  std::vector<std::pair<std::string, Arg>>& named) {
    const auto& sargs = def.schema.args;
    auto wrap = [&](const TypeRef& t, Arg& a) {
      if (t.base != BaseType::Tensor || t.list || a.kind != Arg::Kind::Node ||
          a.node->meta().kind != ValueMeta::Kind::SymInt)
        return;
      auto it = as_tensor_.find(a.node);
      if (it == as_tensor_.end()) {
        std::vector<std::pair<std::string, Arg>> dtype = {
            {"dtype", Arg::of_dtype(ScalarType::Int64)}};
        Node* t0 = b_.call(a.node->name() + "_as_tensor", aten_ops().get("aten::scalar_tensor"),
                           {a}, std::move(dtype), std::nullopt);
        it = as_tensor_.emplace(a.node, t0).first;
      }
      a = Arg(it->second);
    };
    for (size_t i = 0; i < positional.size() && i < sargs.size(); ++i)
      wrap(sargs[i].type, positional[i]);
    for (auto& [k, v] : named)
      for (const auto& sa : sargs)
        if (sa.name == k) wrap(sa.type, v);
  }

  Node* input(const py::handle& a, const std::string& where) {
    auto it = objects_.find(a.ptr());
    if (it == objects_.end())
      throw Error(where + ": " + py::repr(a).cast<std::string>() + " is no earlier node");
    return it->second;
  }

  const OpDef& op_of(const py::handle& target, const std::string& where) {
    auto it = ops_.find(target.ptr());
    if (it != ops_.end()) return *it->second;
    std::string qualified = py::str(target.attr("_schema").attr("name"));
    std::string overload = py::str(target.attr("_overloadname"));
    try {
      const OpDef& def = find_op(qualified, overload);
      ops_.emplace(target.ptr(), &def);
      return def;
    } catch (const Error& e) {
      throw Error(where + " (" + qualified + "." + overload + "): " + e.message());
    }
  }

  Arg arg(const py::handle& a, const std::string& where) {
    PyObject* o = a.ptr();
    if (a.is_none()) return Arg::none();
    if (PyBool_Check(o)) return Arg::of_bool(o == Py_True);
    if (PyLong_Check(o)) return Arg::of_int(a.cast<int64_t>());
    if (PyFloat_Check(o)) return Arg::of_float(PyFloat_AS_DOUBLE(o));
    if (PyUnicode_Check(o)) return Arg::of_str(a.cast<std::string>());
    if (PyList_Check(o) || PyTuple_Check(o)) {
      std::vector<Arg> elems;
      for (const py::handle& e : a) elems.push_back(arg(e, where));
      return Arg::of_list(std::move(elems));
    }
    if (py::isinstance(a, node_type_)) return Arg(input(a, where));
    if (THPDtype_Check(o))
      return Arg::of_dtype(from_c10(reinterpret_cast<THPDtype*>(o)->scalar_type));
    if (THPDevice_Check(o))
      return Arg::of_device(from_c10(reinterpret_cast<THPDevice*>(o)->device));
    if (THPLayout_Check(o)) {
      std::string s = torch_name(reinterpret_cast<THPLayout*>(o)->name);
      return known(layout_from_torch_name(s), Arg::of_layout, "layout", s);
    }
    if (THPMemoryFormat_Check(o)) {
      std::string s = torch_name(reinterpret_cast<THPMemoryFormat*>(o)->name);
      return known(memory_format_from_torch_name(s), Arg::of_memory_format, "memory format", s);
    }
    if (py::isinstance(a, overload_type_)) return Arg::of_op(op_of(a, where));
    throw UnsupportedNode(where + ": aotgrad's IR has no argument like " +
                          py::repr(a).cast<std::string>() + " (" +
                          std::string(Py_TYPE(o)->tp_name) + ")");
  }

  // "strided" of torch's "torch.strided".
  static std::string torch_name(const char* name) {
    std::string s(name);
    return s.rfind("torch.", 0) == 0 ? s.substr(6) : s;
  }

  // The metadata of a fake value: a strided tensor's from its at::Tensor, a SymInt's or int's from
  // its expression, anything else's from its annotation; nullopt for a tuple or no value (the
  // call's is inferred).
  std::optional<ValueMeta> meta_of(const py::handle& val, const std::string& name) {
    if (THPVariable_Check(val.ptr())) {
      const at::Tensor& t = THPVariable_Unpack(val.ptr());
      if (t.layout() == c10::kStrided) {
        TensorMeta m;
        m.dtype = from_c10(t.scalar_type());
        py::object device = device_of(val);
        if (!THPDevice_Check(device.ptr())) throw Error("node '" + name + "': no device");
        m.device = from_c10(reinterpret_cast<THPDevice*>(device.ptr())->device);
        for (const c10::SymInt& s : t.sym_sizes()) m.sizes.push_back(sym(s));
        for (const c10::SymInt& s : t.sym_strides()) m.strides.push_back(sym(s));
        m.storage_offset = sym(t.sym_storage_offset());
        return ValueMeta::of(std::move(m));
      }
    }
    if (PyLong_Check(val.ptr()) && !PyBool_Check(val.ptr()))
      return ValueMeta::of_sym(SymInt(val.cast<int64_t>()));
    if (torch::is_symint(val)) return ValueMeta::of_sym(sym(val.cast<c10::SymInt>()));
    py::object text = annotation_(val);  // a SymFloat, a SymBool, a tensor not strided
    if (text.is_none()) return std::nullopt;
    std::string offset;
    if (THPVariable_Check(val.ptr())) offset = py::str(val.attr("storage_offset")());
    return b_.meta(name, text.cast<std::string>(), offset);
  }

  // Python's device, not at::Tensor::device(): a FakeTensor's is a Python dispatch. A FakeTensor
  // holds it as `fake_device` (what its `device` property returns outside a kernel call, with a
  // Python call); any other tensor is asked for `device`.
  py::object device_of(const py::handle& val) {
    if (PyObject* d = PyObject_GetAttr(val.ptr(), k_fake_device_.ptr()))
      return py::reinterpret_steal<py::object>(d);
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) throw py::error_already_set();
    PyErr_Clear();
    return val.attr(k_device_);
  }

  // A size as aotgrad's SymInt: an integer, or the expression its SymNode prints ("2*s0"), parsed
  // once per text.
  SymInt sym(const c10::SymInt& s) {
    if (std::optional<int64_t> i = s.maybe_as_int()) return SymInt(*i);
    std::string text = s.toSymNode()->str();
    auto it = syms_.find(text);
    if (it != syms_.end()) return it->second;
    std::string error;
    std::optional<SymInt> e = parse_sym_expr(text, &error);
    if (!e) throw Error("a size '" + text + "': " + error);
    return syms_.emplace(text, *e).first->second;
  }

  GraphBuilder& b_;
  py::handle node_type_, overload_type_, getitem_;
  py::dict sym_ops_;
  py::object annotation_;
  py::str k_name_ = interned("name"), k_op_ = interned("op"), k_target_ = interned("target"),
          k_meta_ = interned("meta"), k_val_ = interned("val"), k_args_ = interned("args"),
          k_kwargs_ = interned("kwargs"), k_device_ = interned("device"),
          k_fake_device_ = interned("fake_device"), k_recompute_ = interned("recompute");
  std::unordered_map<PyObject*, Node*> objects_;
  std::unordered_map<PyObject*, const OpDef*> ops_;
  std::unordered_map<std::string, SymInt> syms_;
  std::unordered_map<const Node*, Node*> as_tensor_;  // Note [A SymInt where a Tensor goes]
};

}  // namespace

void bind_from_fx(py::module_& m) {
  static py::exception<UnsupportedNode> unsupported(m, "UnsupportedNode",
                                                    m.attr("AotgradError").ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UnsupportedNode& e) {
      PyErr_SetString(unsupported.ptr(), e.what());
    }
  });
  m.def(
      "from_fx",
      [](const py::handle& graph, const SymbolHints& hints, bool joint, const py::tuple& kinds) {
        GraphBuilder b(hints);
        {
          ScopedSymbolHints scope(&b.hints());
          FxWalk(b, kinds).walk(graph);
        }
        return PyGraph{b.finish(joint)};
      },
      py::arg("graph"), py::arg("hints"), py::arg("joint"), py::arg("kinds"),
      "The aotgrad graph of a torch.fx Graph, walked in C++ (aotgrad.fx.from_fx).");
}

}  // namespace aotgrad

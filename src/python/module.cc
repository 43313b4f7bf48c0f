// aotgrad._C: the Python package's binding of the C++ library (pybind11, the copy torch ships).
//
// Note [FX graphs cross node by node]
// A torch.fx GraphModule enters aotgrad's IR one node at a time (aotgrad/fx.py walks it): each
// placeholder with the annotation its fake value prints as ("f32[4, s0][s0, 1]cpu"), each call
// with its op's qualified name and overload and its arguments, each getitem, then the output.
// Arguments arrive encoded as plain Python values: None, bool, int, float and str as themselves,
// lists as lists, and tagged tuples for the rest -- ("node", name), ("dtype", "f32"),
// ("device", "cuda:0"), ("layout", "strided"), ("memory_format", "contiguous_format"),
// ("op", "aten::t.default"). A call's metadata is its fake value's -- the annotation, and the
// storage offset no annotation prints -- when it has one, as the text parser takes an annotation;
// a tuple's is inferred. finish() verifies the graph, so aotgrad's own
// inference is compared with PyTorch's node by node and a difference names the node. No text is
// printed or parsed on the way. The way back (Graph.nodes()) gives the same encoding.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aotgrad/driver/compile_options.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/symint.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/providers/dispatcher_ops.h"
#include "aotgrad/python/bindings.h"
#include "aotgrad/report/partition_dot.h"
#include "aotgrad/report/timeline_svg.h"
#include "aotgrad/support/logging.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/partition/min_cut.h"

namespace py = pybind11;

namespace aotgrad {
namespace {

// The op named `qualified` ("aten::add") with overload `overload` ("Tensor", "default").
const OpDef& find_op(const std::string& qualified, const std::string& overload) {
  std::string name =
      overload.empty() || overload == "default" ? qualified : qualified + "." + overload;
  return aten_ops().get(name);
}

// `parsed`'s value made an Arg by `make`, else an Error naming the unknown `what`.
template <class T, class Make>
Arg known(const std::optional<T>& parsed, Make make, const char* what, const std::string& s) {
  if (!parsed) throw Error(std::string("aotgrad has no ") + what + " '" + s + "'");
  return make(*parsed);
}

// An encoded argument (Note [FX graphs cross node by node]) as an Arg; `nodes`: the graph's nodes
// so far, by name.
Arg decode(const py::handle& v, const std::unordered_map<std::string, Node*>& nodes) {
  if (v.is_none()) return Arg::none();
  if (py::isinstance<py::bool_>(v)) return Arg::of_bool(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return Arg::of_int(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return Arg::of_float(v.cast<double>());
  if (py::isinstance<py::str>(v)) return Arg::of_str(v.cast<std::string>());
  if (py::isinstance<py::list>(v)) {
    std::vector<Arg> elems;
    for (const py::handle& e : v) elems.push_back(decode(e, nodes));
    return Arg::of_list(std::move(elems));
  }
  if (py::isinstance<py::tuple>(v)) {
    auto t = v.cast<py::tuple>();
    if (t.size() != 2 || !py::isinstance<py::str>(t[0]))
      throw Error("an encoded argument is a (tag, value) pair, got " +
                  py::repr(v).cast<std::string>());
    std::string tag = t[0].cast<std::string>();
    if (tag == "tuple") {
      std::vector<Arg> elems;
      for (const py::handle& e : t[1]) elems.push_back(decode(e, nodes));
      return Arg::of_tuple(std::move(elems));
    }
    std::string s = t[1].cast<std::string>();
    if (tag == "node") {
      auto it = nodes.find(s);
      if (it == nodes.end()) throw Error("argument '" + s + "' names no earlier node");
      return Arg(it->second);
    }
    if (tag == "dtype") return known(scalar_type_from_short_name(s), Arg::of_dtype, "dtype", s);
    if (tag == "device") return known(device_from_string(s), Arg::of_device, "device", s);
    if (tag == "layout") return known(layout_from_torch_name(s), Arg::of_layout, "layout", s);
    if (tag == "memory_format")
      return known(memory_format_from_torch_name(s), Arg::of_memory_format, "memory format", s);
    if (tag == "op") {
      size_t dot = s.find('.', s.find("::"));
      return Arg::of_op(
          find_op(s.substr(0, dot), dot == std::string::npos ? "" : s.substr(dot + 1)));
    }
    throw Error("unknown argument tag '" + tag + "'");
  }
  throw Error("cannot encode " + py::repr(v).cast<std::string>() + " as an argument");
}

py::object encode(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::None: return py::none();
    case Arg::Kind::Node: return py::make_tuple("node", a.node->name());
    case Arg::Kind::Int: return py::int_(a.i);
    case Arg::Kind::Float: return py::float_(a.f);
    case Arg::Kind::Bool: return py::bool_(a.i != 0);
    case Arg::Kind::Str: return py::str(a.str);
    case Arg::Kind::Dtype:
      return py::make_tuple("dtype", std::string(short_name(static_cast<ScalarType>(a.i))));
    case Arg::Kind::Device: return py::make_tuple("device", to_string(a.device));
    case Arg::Kind::Layout:
      return py::make_tuple("layout", std::string(torch_name(static_cast<Layout>(a.i))));
    case Arg::Kind::MemoryFormat:
      return py::make_tuple("memory_format",
                            std::string(torch_name(static_cast<MemoryFormat>(a.i))));
    case Arg::Kind::List: {
      py::list l;
      for (const Arg& e : a.list) l.append(encode(e));
      return l;
    }
    case Arg::Kind::Tuple: {
      py::list l;
      for (const Arg& e : a.list) l.append(encode(e));
      return py::make_tuple("tuple", l);
    }
    case Arg::Kind::Op: return py::make_tuple("op", a.op->name);
    case Arg::Kind::Graph: break;
  }
  throw Error("a subgraph argument ('" + a.str + "') does not cross into Python yet");
}

std::string graph_text(const PyGraph& g) { return print_graph(*g.graph); }

// One tuple per node, in graph order: (kind, name, target, args, kwargs, annotation). kind is
// "placeholder", "call", "getitem" or "output"; a call's target is its op's qualified name and
// overload ("aten::add.Tensor"), its args the schema's given positional arguments and its kwargs
// the given keyword-only ones, as FX writes them; annotation "" for a tuple or None.
py::list graph_nodes(const PyGraph& g) {
  py::list out;
  for (const Node* n : g.graph->nodes()) {
    std::string ann = n->meta().annotation();
    switch (n->kind()) {
      case NodeKind::Placeholder:
        out.append(
            py::make_tuple("placeholder", n->name(), py::none(), py::list(), py::dict(), ann));
        break;
      case NodeKind::GetItem:
        out.append(py::make_tuple("getitem", n->name(), py::none(),
                                  py::make_tuple(n->getitem_input()->name(), n->getitem_index()),
                                  py::dict(), ann));
        break;
      case NodeKind::Output:
        out.append(
            py::make_tuple("output", n->name(), py::none(), encode(n->args()[0]), py::dict(), ann));
        break;
      case NodeKind::Call: {
        const OpDef& op = *n->op();
        py::list args;
        py::dict kwargs;
        const auto& sargs = op.schema.args;
        for (size_t i = 0; i < sargs.size(); ++i) {
          if (!((n->given_mask() >> i) & 1u)) continue;
          if (sargs[i].kwarg_only)
            kwargs[py::str(sargs[i].name)] = encode(n->args()[i]);
          else
            args.append(encode(n->args()[i]));
        }
        std::string target = op.schema.qualified_name();
        out.append(py::make_tuple("call", n->name(), target, args, kwargs, ann));
        break;
      }
    }
  }
  return out;
}

// GraphBuilder: an FX graph, node by node (Note [FX graphs cross node by node]).
class GraphBuilder {
 public:
  explicit GraphBuilder(const SymbolHints& hints)
      : hints_(hints), graph_(std::make_unique<Graph>()) {}

  void placeholder(const std::string& name, const std::string& annotation,
                   const std::string& offset) {
    ScopedSymbolHints scope(&hints_);
    add(name, graph().add_placeholder(name, meta(name, annotation, offset)));
  }

  void call(const std::string& name, const std::string& qualified, const std::string& overload,
            const py::list& args, const py::dict& kwargs,
            const std::optional<std::string>& annotation, const std::string& offset) {
    ScopedSymbolHints scope(&hints_);
    try {
      const OpDef& op = find_op(qualified, overload);
      std::vector<Arg> positional;
      for (const py::handle& a : args) positional.push_back(decode(a, nodes_));
      std::vector<std::pair<std::string, Arg>> named;
      for (auto [k, v] : kwargs) named.emplace_back(k.cast<std::string>(), decode(v, nodes_));
      auto [bound, given] = bind_arguments(op, std::move(positional), std::move(named));
      ValueMeta m;
      if (annotation) {
        m = meta(name, *annotation, offset);
      } else {
        try {
          m = infer_meta(op, bound);
        } catch (const Error& e) {
          // Note [Recorded sizes]: the getitems' annotations give a dynamic_output_shape op's
          // results.
          if (!op.has_tag(kDynamicOutputShape) || op.schema.returns.size() < 2) throw;
          m = ValueMeta::tuple(std::vector<ValueMeta>(op.schema.returns.size()));
        }
      }
      add(name, graph().add_call_raw(op, std::move(bound), given, std::move(m), name));
    } catch (const Error& e) {
      throw Error("node '" + name + "' (" + qualified + "." + overload + "): " + e.message());
    }
  }

  void getitem(const std::string& name, const std::string& input, int64_t index,
               const std::optional<std::string>& annotation, const std::string& offset) {
    ScopedSymbolHints scope(&hints_);
    graph();
    auto it = nodes_.find(input);
    if (it == nodes_.end())
      throw Error("node '" + name + "': '" + input + "' names no earlier node");
    Node* in = it->second;
    if (in->meta().kind != ValueMeta::Kind::Tuple || index < 0 ||
        index >= static_cast<int64_t>(in->meta().elems.size()))
      throw Error("node '" + name + "': " + in->describe() + " has no result " +
                  std::to_string(index));
    std::optional<ValueMeta> m;
    if (annotation) m = meta(name, *annotation, offset);
    if (m && in->meta().elems[index].kind == ValueMeta::Kind::None)
      in->mutable_meta().elems[index] = *m;  // Note [Recorded sizes]
    Node* n = graph().add_getitem(in, index, name);
    if (m && !n->meta().same_as(*m)) n->mutable_meta() = std::move(*m);  // the verifier reports it
    add(name, n);
  }

  // A selective checkpoint policy on a call (node.meta["recompute"]: MUST_SAVE, PREFER_SAVE,
  // MUST_RECOMPUTE or PREFER_RECOMPUTE), which the min-cut honours.
  void recompute(const std::string& name, const std::string& policy) {
    graph();
    auto it = nodes_.find(name);
    if (it == nodes_.end() || it->second->kind() != NodeKind::Call)
      throw Error("a recompute policy on '" + name + "', which is not an earlier call");
    std::optional<RecomputePolicy> p = parse_recompute_policy(policy);
    if (!p)
      throw Error("node '" + name + "': unknown recompute policy '" + policy +
                  "'; expected MUST_SAVE, PREFER_SAVE, MUST_RECOMPUTE or PREFER_RECOMPUTE");
    it->second->info().recompute = *p;
  }

  void output(const py::handle& value) { graph().set_output(decode(value, nodes_)); }

  PyGraph finish(bool joint) {
    if (!graph().output()) throw Error("the graph has no output");
    graph_->signature = joint ? Signature::Joint : Signature::Plain;
    ScopedSymbolHints scope(&hints_);
    verify(*graph_);
    return PyGraph{std::shared_ptr<Graph>(std::move(graph_))};
  }

 private:
  Graph& graph() {
    if (!graph_) throw Error("this GraphBuilder's graph is finished: start another");
    return *graph_;
  }

  // The metadata of a fake value: its annotation and, for a tensor, its storage offset (which no
  // annotation prints).
  ValueMeta meta(const std::string& name, const std::string& annotation,
                 const std::string& offset) {
    ValueMeta m;
    try {
      m = parse_annotation(annotation);
    } catch (const Error& e) {
      throw Error("node '" + name + "': annotation \"" + annotation + "\": " + e.message());
    }
    if (m.is_tensor() && !offset.empty()) {
      std::string error;
      std::optional<SymInt> o = parse_sym_expr(offset, &error);
      if (!o) throw Error("node '" + name + "': storage offset '" + offset + "': " + error);
      m.tensor.storage_offset = *o;
    }
    return m;
  }
  void add(const std::string& name, Node* n) {
    if (!nodes_.emplace(name, n).second) throw Error("two nodes are named '" + name + "'");
  }

  SymbolHints hints_;
  std::unique_ptr<Graph> graph_;
  std::unordered_map<std::string, Node*> nodes_;
};

// The joint graph's layout, as min_cut_rematerialization_partition receives it: primals_*, then
// tangents_*; the forward outputs, then one gradient or None per primal.
JointGraph joint_layout(const PyGraph& joint, size_t num_fwd_outputs) {
  JointGraph j;
  j.graph = joint.graph->clone();
  for (const Node* p : j.graph->placeholders())
    (p->name().rfind("tangents", 0) == 0 ? j.num_tangents : j.num_primals) += 1;
  j.num_forward_outputs = num_fwd_outputs;
  return j;
}

// The joint graph partitioned by aotgrad's min-cut: (forward, backward, saved names -- tensors
// then SymInts, in the order the forward returns them --, the partitioner's explanation). Logged
// as the pipeline logs (AOTGRAD_LOGS: aot_joint_graph, aot_graphs, partitioner).
py::tuple min_cut(const PyGraph& joint, size_t num_fwd_outputs,
                  const std::vector<int64_t>& static_lifetime_input_indices,
                  const py::object& memory_budget) {
  JointGraph j = joint_layout(joint, num_fwd_outputs);
  // The budget as the command line's --memory-budget reads it (a number in [0, 1], or auto).
  MinCutOptions options;
  if (!memory_budget.is_none()) {
    std::string text = py::str(memory_budget).cast<std::string>();
    try {
      options = parse_compile_options({{"memory-budget", text}}).min_cut;
    } catch (const Error& e) {
      throw Error("memory_budget is a number in [0, 1] or \"auto\": " + e.message());
    }
  }
  options.static_lifetime_inputs.assign(j.num_primals, false);
  for (int64_t i : static_lifetime_input_indices) {
    if (i < 0 || i >= static_cast<int64_t>(j.num_primals))
      throw Error("static_lifetime_input_indices: " + std::to_string(i) +
                  " is not a primal's index (" + std::to_string(j.num_primals) + " primals)");
    options.static_lifetime_inputs[i] = true;
  }
  MinCutExplain explain;
  Partition p = min_cut_partition(j, options, &explain);
  std::string text = explain_text(explain);
  const LogSettings& logs = log_settings();
  if (logs.any()) {
    std::string id = std::to_string(next_aot_id());
    if (logs.joint_graph) log_graph("Joint graph " + id, *j.graph);
    if (logs.graphs) {
      log_graph("Forward graph " + id, *p.fw);
      log_graph("Backward graph " + id, *p.bw);
    }
    if (logs.partitioner) log_text("aotgrad partitioner " + id + ": " + text);
  }
  return py::make_tuple(PyGraph{std::shared_ptr<Graph>(std::move(p.fw))},
                        PyGraph{std::shared_ptr<Graph>(std::move(p.bw))}, p.saved, text);
}

}  // namespace
}  // namespace aotgrad

PYBIND11_MODULE(_C, m) {
  using namespace aotgrad;
  m.doc() = "aotgrad's C++ library: FX graphs into aotgrad's IR and back";
  py::register_exception<Error>(m, "AotgradError", PyExc_RuntimeError);
  install_libtorch_ops();

  py::class_<PyGraph>(m, "Graph")
      .def("text", &graph_text, "The graph in aotgrad's text form (PyTorch's printed code).")
      .def("nodes", &graph_nodes, "One (kind, name, target, args, kwargs, annotation) per node.")
      .def("__len__", [](const PyGraph& g) { return g.graph->size(); });

  m.def(
      "parse",
      [](const std::string& text) {
        return PyGraph{std::shared_ptr<Graph>(parse_graph(text, aten_ops()))};
      },
      py::arg("text"), "Parses a graph's text form (the code PyTorch prints).");

  m.def(
      "partition_dot",
      [](const PyGraph& joint, const PyGraph& fw, const PyGraph& bw,
         const std::vector<std::string>& saved) {
        return joint_graph_dot(*joint.graph, *fw.graph, *bw.graph, saved);
      },
      py::arg("joint"), py::arg("fw"), py::arg("bw"), py::arg("saved"),
      "Graphviz of the joint graph, each node filled by its role in the partition.");
  m.def(
      "partition_timeline_svg",
      [](const PyGraph& joint, size_t num_fwd_outputs, const PyGraph& fw, const PyGraph& bw,
         const std::vector<std::string>& saved, const std::string& label) {
        JointGraph j = joint_layout(joint, num_fwd_outputs);
        return partition_timeline_svg(*j.graph, j, *fw.graph, *bw.graph, saved, label);
      },
      py::arg("joint"), py::arg("num_fwd_outputs"), py::arg("fw"), py::arg("bw"), py::arg("saved"),
      py::arg("label") = "aotgrad",
      "SVG of the training step's live bytes, the partition against default_partition.");
  m.def(
      "set_logs", [](const std::string& spec) { set_log_settings(parse_log_settings(spec)); },
      py::arg("spec"), "Sets what is logged, as AOTGRAD_LOGS does (\"partitioner,aot_graphs\").");
  m.def("min_cut_partition", &min_cut, py::arg("joint"), py::arg("num_fwd_outputs"),
        py::arg("static_lifetime_input_indices") = std::vector<int64_t>(),
        py::arg("memory_budget") = py::none(),
        "aotgrad's min-cut partition of a joint graph: (forward, backward, saved names, why).");

  bind_compiled(m);

  py::class_<GraphBuilder>(m, "GraphBuilder")
      .def(py::init<const SymbolHints&>(), py::arg("hints") = SymbolHints())
      .def("placeholder", &GraphBuilder::placeholder, py::arg("name"), py::arg("annotation"),
           py::arg("offset") = "")
      .def("call", &GraphBuilder::call, py::arg("name"), py::arg("op"), py::arg("overload"),
           py::arg("args"), py::arg("kwargs"), py::arg("annotation") = py::none(),
           py::arg("offset") = "")
      .def("getitem", &GraphBuilder::getitem, py::arg("name"), py::arg("input"), py::arg("index"),
           py::arg("annotation") = py::none(), py::arg("offset") = "")
      .def("recompute", &GraphBuilder::recompute, py::arg("name"), py::arg("policy"))
      .def("output", &GraphBuilder::output, py::arg("value"))
      .def("finish", &GraphBuilder::finish, py::arg("joint") = false);
}

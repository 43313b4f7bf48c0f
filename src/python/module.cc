// aotgrad._C: the Python package's binding of the C++ library (pybind11, the copy torch ships).
//
// Note [FX graphs cross node by node]
// A torch.fx GraphModule enters aotgrad's IR one node at a time, walked in C++ (from_fx.cc): each
// placeholder with its fake value's metadata -- a tensor's dtype, device, sizes, strides and
// storage offset read from its at::Tensor, symbolic ones as the expressions their SymNodes print
// -- each call with its op's OpDef (looked up once per OpOverload) and its arguments made Args as
// they are read, each getitem and SymInt operation, then the output. A call without a fake value
// (a tuple) has its metadata inferred. finish() verifies the graph, so aotgrad's own inference is
// compared with PyTorch's node by node and a difference names the node. No text is printed or
// parsed on the way. GraphBuilder takes the same nodes one Python call each, with the annotation
// a fake value prints as ("f32[4, s0][s0, 1]cpu") and arguments encoded as plain Python values:
// None, bool, int, float and str as themselves, lists as lists, and tagged tuples for the rest --
// ("node", name), ("dtype", "f32"), ("device", "cuda:0"), ("layout", "strided"),
// ("memory_format", "contiguous_format"), ("op", "aten::t.default"); Graph.nodes() gives the same
// encoding. The way back to FX is built in C++ too (to_fx.cc), one Graph.create_node per node.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
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
#include "aotgrad/python/graph_builder.h"
#include "aotgrad/report/partition_dot.h"
#include "aotgrad/report/timeline_svg.h"
#include "aotgrad/support/logging.h"
#include "aotgrad/transforms/autograd.h"
#include "aotgrad/transforms/partition/memory_schedule.h"
#include "aotgrad/transforms/partition/min_cut.h"

namespace py = pybind11;

namespace aotgrad {

const OpDef& find_op(const std::string& qualified, const std::string& overload) {
  std::string name =
      overload.empty() || overload == "default" ? qualified : qualified + "." + overload;
  return aten_ops().get(name);
}

namespace {

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
        auto [args, kwargs] = call_arguments(*n, encode);
        std::string target = n->op()->schema.qualified_name();
        out.append(py::make_tuple("call", n->name(), target, args, kwargs, ann));
        break;
      }
    }
  }
  return out;
}

// The joint graph's layout, as min_cut_rematerialization_partition receives it: primals_*, then
// tangents_*; the forward outputs, then one gradient or None per primal. Over the Python-held
// graph itself, not a copy: the partition and the pictures only read it. A JointGraph owns its
// graph, so the borrowed one is released, not freed, and the PyGraph's is kept alive meanwhile.
class JointLayout {
 public:
  JointLayout(const PyGraph& joint, size_t num_fwd_outputs) : keep_(joint.graph) {
    j_.graph.reset(keep_.get());
    for (const Node* p : j_.graph->placeholders())
      (p->name().rfind("tangents", 0) == 0 ? j_.num_tangents : j_.num_primals) += 1;
    j_.num_forward_outputs = num_fwd_outputs;
  }
  ~JointLayout() { static_cast<void>(j_.graph.release()); }
  JointLayout(const JointLayout&) = delete;
  JointLayout& operator=(const JointLayout&) = delete;
  const JointGraph& get() const { return j_; }

 private:
  std::shared_ptr<Graph> keep_;
  JointGraph j_;
};

// The joint graph partitioned by aotgrad's min-cut and ordered by its schedule: (forward,
// backward, saved names -- tensors then SymInts, in the order the forward returns them --, the
// partitioner's explanation). `options`: the command line's compile options by name, those of the
// partition and the schedule ({"memory-budget": "0.5", "solver": "dp", "schedule": "memory"});
// an Error names the argument. Logged as the pipeline logs (AOTGRAD_LOGS: aot_joint_graph,
// aot_graphs, partitioner).
py::tuple min_cut(const PyGraph& joint, size_t num_fwd_outputs,
                  const std::vector<int64_t>& static_lifetime_input_indices,
                  const std::map<std::string, std::string>& options) {
  JointLayout layout(joint, num_fwd_outputs);
  const JointGraph& j = layout.get();
  static const std::map<std::string, std::string> python_names = {
      {"memory-budget", "memory_budget is a number in [0, 1] or \"auto\""},
      {"solver", "solver is \"dp\", \"greedy\" or \"ilp\""},
      {"schedule", "schedule is \"memory\" or \"none\""}};
  for (const auto& [name, value] : options) {  // each alone first, for an error in Python's words
    auto it = python_names.find(name);
    if (it == python_names.end()) throw Error("min_cut_partition has no option '" + name + "'");
    try {
      parse_compile_options({{name, value}});
    } catch (const Error& e) {
      throw Error(it->second + ": " + e.message());
    }
  }
  CompileOptions parsed =
      parse_compile_options(GivenCompileOptions(options.begin(), options.end()));
  MinCutOptions& o = parsed.min_cut;
  o.static_lifetime_inputs.assign(j.num_primals, false);
  for (int64_t i : static_lifetime_input_indices) {
    if (i < 0 || i >= static_cast<int64_t>(j.num_primals))
      throw Error("static_lifetime_input_indices: " + std::to_string(i) +
                  " is not a primal's index (" + std::to_string(j.num_primals) + " primals)");
    o.static_lifetime_inputs[i] = true;
  }
  MinCutExplain explain;
  Partition p = min_cut_partition(j, o, &explain, parsed.schedule);
  std::string text = explain_text(explain);
  if (parsed.schedule == ScheduleKind::kMemory)
    text += "schedule: " + schedule_text(schedule_for_memory(p.fw, p.bw, p.saved)) + "\n";
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

std::pair<py::list, py::dict> call_arguments(const Node& n,
                                             const std::function<py::object(const Arg&)>& value) {
  py::list args;
  py::dict kwargs;
  const auto& sargs = n.op()->schema.args;
  for (size_t i = 0; i < sargs.size(); ++i) {
    if (!((n.given_mask() >> i) & 1u)) continue;
    if (sargs[i].kwarg_only)
      kwargs[py::str(sargs[i].name)] = value(n.args()[i]);
    else
      args.append(value(n.args()[i]));
  }
  return {std::move(args), std::move(kwargs)};
}

// An encoded argument (Note [FX graphs cross node by node]) as an Arg; `nodes`: the graph so far.
Arg decode_encoded(const py::handle& v, const GraphBuilder& nodes) {
  if (v.is_none()) return Arg::none();
  if (py::isinstance<py::bool_>(v)) return Arg::of_bool(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return Arg::of_int(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return Arg::of_float(v.cast<double>());
  if (py::isinstance<py::str>(v)) return Arg::of_str(v.cast<std::string>());
  if (py::isinstance<py::list>(v)) {
    std::vector<Arg> elems;
    for (const py::handle& e : v) elems.push_back(decode_encoded(e, nodes));
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
      for (const py::handle& e : t[1]) elems.push_back(decode_encoded(e, nodes));
      return Arg::of_tuple(std::move(elems));
    }
    std::string s = t[1].cast<std::string>();
    if (tag == "node") return Arg(nodes.node(s, "an argument"));
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
        JointLayout j(joint, num_fwd_outputs);
        return partition_timeline_svg(*j.get().graph, j.get(), *fw.graph, *bw.graph, saved, label);
      },
      py::arg("joint"), py::arg("num_fwd_outputs"), py::arg("fw"), py::arg("bw"), py::arg("saved"),
      py::arg("label") = "aotgrad",
      "SVG of the training step's live bytes, the partition against default_partition.");
  m.def(
      "set_logs", [](const std::string& spec) { set_log_settings(parse_log_settings(spec)); },
      py::arg("spec"), "Sets what is logged, as AOTGRAD_LOGS does (\"partitioner,aot_graphs\").");
  m.def("min_cut_partition", &min_cut, py::arg("joint"), py::arg("num_fwd_outputs"),
        py::arg("static_lifetime_input_indices") = std::vector<int64_t>(),
        py::arg("options") = std::map<std::string, std::string>(),
        "aotgrad's min-cut partition of a joint graph, ordered by its schedule: (forward, "
        "backward, saved names, why); options by name: memory-budget, solver, schedule.");

  bind_compiled(m);

  py::class_<GraphBuilder>(m, "GraphBuilder")
      .def(py::init<SymbolHints>(), py::arg("hints") = SymbolHints())
      .def(
          "placeholder",
          [](GraphBuilder& b, const std::string& name, const std::string& annotation,
             const std::string& offset) { b.placeholder(name, b.meta(name, annotation, offset)); },
          py::arg("name"), py::arg("annotation"), py::arg("offset") = "")
      .def(
          "call",
          [](GraphBuilder& b, const std::string& name, const std::string& qualified,
             const std::string& overload, const py::list& args, const py::dict& kwargs,
             const std::optional<std::string>& annotation, const std::string& offset) {
            const OpDef* op = nullptr;
            std::vector<Arg> positional;
            std::vector<std::pair<std::string, Arg>> named;
            try {
              op = &find_op(qualified, overload);
              for (const py::handle& a : args) positional.push_back(decode_encoded(a, b));
              for (auto [k, v] : kwargs)
                named.emplace_back(k.cast<std::string>(), decode_encoded(v, b));
            } catch (const Error& e) {
              throw Error("node '" + name + "' (" + qualified + "." + overload +
                          "): " + e.message());
            }
            std::optional<ValueMeta> m;
            if (annotation) m = b.meta(name, *annotation, offset);
            b.call(name, *op, std::move(positional), std::move(named), std::move(m));
          },
          py::arg("name"), py::arg("op"), py::arg("overload"), py::arg("args"), py::arg("kwargs"),
          py::arg("annotation") = py::none(), py::arg("offset") = "")
      .def(
          "getitem",
          [](GraphBuilder& b, const std::string& name, const std::string& input, int64_t index,
             const std::optional<std::string>& annotation, const std::string& offset) {
            std::optional<ValueMeta> m;
            if (annotation) m = b.meta(name, *annotation, offset);
            b.getitem(name, b.node(input, "node '" + name + "'"), index, std::move(m));
          },
          py::arg("name"), py::arg("input"), py::arg("index"), py::arg("annotation") = py::none(),
          py::arg("offset") = "")
      .def("recompute", &GraphBuilder::recompute, py::arg("name"), py::arg("policy"))
      .def(
          "output", [](GraphBuilder& b, const py::handle& v) { b.output(decode_encoded(v, b)); },
          py::arg("value"))
      .def(
          "finish", [](GraphBuilder& b, bool joint) { return PyGraph{b.finish(joint)}; },
          py::arg("joint") = false);

  bind_from_fx(m);
  bind_to_fx(m);
}

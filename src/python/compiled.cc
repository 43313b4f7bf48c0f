// aotgrad._C.compile: a forward graph through aotgrad's whole pipeline -- functionalization, the
// joint graph, decompositions, the partition and memory planning -- run by aotgrad's runtime inside
// libtorch's autograd (CompiledFunction; CompiledGraph when no input requires grad), for
// torch.compile(backend="aotgrad") (python/aotgrad/dynamo.py). Tensors cross with torch's own
// pybind11 casters, so a Python tensor is the at::Tensor aotgrad runs on, autograd history and all.
#include <torch/csrc/utils/pybind.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/driver/compile_options.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/python/bindings.h"
#include "aotgrad/runtime/compiled_function.h"
#include "aotgrad/runtime/compiled_graph.h"
#include "aotgrad/runtime/memory.h"
#include "aotgrad/support/logging.h"

namespace py = pybind11;

namespace aotgrad {
namespace {

// A compiled forward graph: training when some input requires grad, else inference.
class PyCompiled {
 public:
  PyCompiled(const PyGraph& g, std::vector<bool> requires_grad,
             const std::map<std::string, std::string>& options, std::vector<bool> static_inputs,
             bool enable_log) {
    // AOTConfig.enable_log: off, this compilation logs nothing (AOTGRAD_LOGS aside).
    const LogSettings logs = log_settings();
    if (!enable_log) set_log_settings(LogSettings{});
    struct Restore {
      const LogSettings& logs;
      ~Restore() { set_log_settings(logs); }
    } restore{logs};
    GivenCompileOptions given(options.begin(), options.end());
    CompileOptions pipeline = parse_compile_options(given);
    bool training = false;
    for (bool r : requires_grad) training = training || r;
    if (training) {
      TrainOptions t;
      t.pipeline = std::move(pipeline);
      t.pipeline.min_cut.static_lifetime_inputs = std::move(static_inputs);
      train_ = std::make_unique<CompiledFunction>(g.graph, std::move(requires_grad), std::move(t));
    } else {
      infer_ = std::make_unique<CompiledGraph>(g.graph, std::move(pipeline));
    }
  }

  py::tuple operator()(const std::vector<at::Tensor>& args) {
    std::vector<at::Tensor> out;
    {
      py::gil_scoped_release release;
      if (train_) {
        out = (*train_)(args);
      } else {
        std::vector<c10::IValue> in(args.begin(), args.end());
        for (c10::IValue& v : (*infer_)(std::move(in)))
          out.push_back(v.isTensor() ? v.toTensor() : at::Tensor());
      }
    }
    py::tuple t(out.size());
    for (size_t i = 0; i < out.size(); ++i) t[i] = out[i].defined() ? py::cast(out[i]) : py::none();
    return t;
  }

  bool training() const { return train_ != nullptr; }

 private:
  std::unique_ptr<CompiledFunction> train_;
  std::unique_ptr<CompiledGraph> infer_;
};

}  // namespace

void bind_compiled(py::module_& m) {
  py::class_<PyCompiled>(m, "CompiledFunction")
      .def(py::init<const PyGraph&, std::vector<bool>, const std::map<std::string, std::string>&,
                    std::vector<bool>, bool>(),
           py::arg("graph"), py::arg("requires_grad"),
           py::arg("options") = std::map<std::string, std::string>(),
           py::arg("static_inputs") = std::vector<bool>(), py::arg("enable_log") = true,
           "Compiles a forward graph of ATen ops (in-place ops and views allowed) with aotgrad's "
           "pipeline; `options` are the command line's compile options by name "
           "({'memory-budget': '0.5'}); `static_inputs` flags the inputs that outlive the step "
           "(parameters, buffers: free to save); `enable_log` off: this compilation logs nothing.")
      .def("__call__", &PyCompiled::operator(), py::arg("args"),
           "Runs it on one tensor per placeholder; the outputs are connected to autograd.")
      .def_property_readonly("training", &PyCompiled::training);

  m.def(
      "check_compile_options",
      [](const std::map<std::string, std::string>& options) {
        parse_compile_options(GivenCompileOptions(options.begin(), options.end()));
      },
      py::arg("options"),
      "Raises AotgradError naming the option and the cause when `options` (the command line's "
      "compile options by name) are not all valid.");
  // The measured CPU memory (aotgrad/runtime/memory.h), for benchmarks that run in Python: every
  // CPU tensor libtorch allocates after track_cpu_memory() -- eager's, Inductor's, aotgrad's -- is
  // counted.
  m.def("track_cpu_memory", &install_tracking_allocator,
        "Installs aotgrad's tracking allocator as libtorch's CPU allocator (idempotent); storage "
        "allocated before is not counted.");
  m.def(
      "cpu_memory_stats",
      [] {
        if (!tracking_allocator_installed())
          throw Error("cpu_memory_stats: call aotgrad._C.track_cpu_memory() first");
        MemoryStats s = memory_stats();
        py::dict d;
        d["current_bytes"] = s.current_bytes;
        d["peak_bytes"] = s.peak_bytes;
        d["allocations"] = s.allocations;
        return d;
      },
      "{'current_bytes', 'peak_bytes', 'allocations'} of CPU tensor storage since the last "
      "reset_cpu_peak_memory().");
  m.def("reset_cpu_peak_memory", py::overload_cast<>(&reset_peak_memory),
        "Sets the peak to the bytes alive now and the allocation count to zero.");
}

}  // namespace aotgrad

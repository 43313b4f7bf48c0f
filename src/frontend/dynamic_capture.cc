// aotgrad: dynamic capture -- a C++ function traced once with libtorch SymInt sizes (Note [One
// symbolic trace]), or at three sizes and unified into one graph with symbolic sizes (Note
// [Unifying traces] in transforms/symbolize.cc).
#include "aotgrad/frontend/dynamic_capture.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "aotgrad/ir/printer.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/providers/sym_node.h"

namespace aotgrad {
namespace {

// Strides of a dense tensor of `sizes` laid out in `like`'s dimension order (outermost first, as
// empty_like's preserve_format).
std::vector<int64_t> strides_like(const at::Tensor& like, const std::vector<int64_t>& sizes) {
  const int64_t n = like.dim();
  std::vector<int64_t> strides(n, 1);
  if (like.is_contiguous()) {
    for (int64_t d = n - 2; d >= 0; --d)
      strides[d] = strides[d + 1] * std::max<int64_t>(sizes[d + 1], 1);
    return strides;
  }
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return like.stride(a) > like.stride(b); });
  for (int64_t k = n - 2; k >= 0; --k)
    strides[order[k]] = strides[order[k + 1]] * std::max<int64_t>(sizes[order[k + 1]], 1);
  return strides;
}

std::string where(const CaptureOptions& o, size_t input) {
  return o.input_names.empty() ? "input " + std::to_string(input)
                               : "input '" + o.input_names[input] + "'";
}

// The example inputs with the dynamic dimensions at `point`'s values: fresh tensors (their data
// is never read) of the same dtype, device, dimension order and requires_grad, at storage offset 0
// (a slice of a batch has an offset that would change with the sizes).
std::vector<at::Tensor> inputs_at(const std::vector<at::Tensor>& ex, const DynamicCapture& c,
                                  const std::vector<int64_t>& point) {
  std::vector<std::vector<int64_t>> sizes(ex.size());
  for (size_t j = 0; j < ex.size(); ++j) sizes[j] = ex[j].sizes().vec();
  std::vector<bool> changed(ex.size(), false);
  for (const auto& [d, sym] : c.dims) {
    sizes[d.input][d.dim] = c.points.sources[sym].divisor * point[sym];
    changed[d.input] = true;
  }
  std::vector<at::Tensor> out;
  for (size_t j = 0; j < ex.size(); ++j) {
    if (!changed[j] || (sizes[j] == ex[j].sizes().vec() && ex[j].storage_offset() == 0)) {
      out.push_back(ex[j]);
      continue;
    }
    at::Tensor t = at::empty_strided(sizes[j], strides_like(ex[j], sizes[j]),
                                     ex[j].options().requires_grad(false));
    if (ex[j].requires_grad()) t.requires_grad_(true);
    out.push_back(t);
  }
  return out;
}

// Note [One symbolic trace]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// libtorch 2.x carries symbolic sizes below the dispatcher: a TensorImpl's sizes may be
// c10::SymInts whose SymNodeImpl is aotgrad's own (providers/sym_node.h), so the function runs
// once on fakes of sizes s0, s1, ... (hints: the example sizes). Autograd and the composite kernels
// compute on those SymInts; each recorded call's metadata is what the registry's meta functions
// infer over the symbols; a symbolic size an op reads becomes sym_size.int and operator nodes, as
// make_fx's symbolic mode records them. libtorch's own Meta kernels refuse symbolic sizes from C++
// (tools/symbolic_meta_probe.cc), so a call of an op the registry does not declare cannot be
// recorded symbolically; nor can a kernel that reads sizes as integers (`sizes()`, `numel()`:
// matmul's has an aotgrad kernel that does not, providers/symbolic_kernels.h). A decision about
// the sizes that their range (2 and up) does not settle -- libtorch's comparisons of SymInts, a
// meta function's check that holds by the hints -- is taken by the hints and recorded as a guard,
// which bind_dynamic checks, as PyTorch's ShapeEnv does; a guard that fixes a size (Eq(s0, 6))
// leaves no dynamic graph. Where the one trace cannot be, the capture traces at three sizes and
// unifies (Note [Unifying traces]), which also checks a size 0 or 1.

// The strides of a dense tensor of `sizes` (symbolic) laid out in `like`'s dimension order.
SymIntVector symbolic_strides(const at::Tensor& like, const SymIntVector& sizes) {
  const int64_t n = like.dim();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (!like.is_contiguous())
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return like.stride(a) > like.stride(b); });
  SymIntVector strides(n, 1);
  for (int64_t k = n - 2; k >= 0; --k) {
    const SymInt& inner = sizes[order[k + 1]];
    strides[order[k]] =
        strides[order[k + 1]] * (inner.is_concrete() ? std::max<int64_t>(inner.value(), 1) : inner);
  }
  return strides;
}

// The placeholders' metadata of a symbolic trace: each dynamic dimension divisor * its symbol
// (hint: `hints`), the tensor dense in its example's dimension order at offset 0.
std::vector<TensorMeta> symbolic_inputs(const std::vector<at::Tensor>& ex, const DynamicCapture& c,
                                        const std::vector<int64_t>& hints) {
  std::vector<TensorMeta> out;
  for (const at::Tensor& t : ex) out.push_back(tensor_meta_of(t));
  std::vector<bool> changed(ex.size(), false);
  for (const auto& [d, sym] : c.dims) {
    const SymbolSource& src = c.points.sources[sym];
    out[d.input].sizes[d.dim] = src.divisor * SymInt::symbol(symbol_name(sym), hints[sym]);
    changed[d.input] = true;
  }
  for (size_t j = 0; j < ex.size(); ++j) {
    if (!changed[j]) continue;
    out[j].strides = symbolic_strides(ex[j], out[j].sizes);
    out[j].storage_offset = 0;
  }
  return out;
}

// The function traced once with symbolic sizes (Note [One symbolic trace]), with every symbol a
// bare size of value `hints` (2 and up), and the guards it took into c.size_guards; nullptr with
// the reason in `why` when it cannot be.
std::unique_ptr<Graph> trace_symbolic(const TensorFunction& fn, const std::vector<at::Tensor>& ex,
                                      DynamicCapture& c, const std::vector<int64_t>& hints,
                                      const CaptureOptions& options,
                                      std::vector<at::Tensor>* constants, std::string* why) {
  for (SymbolSource& s : c.points.sources) s.divisor = 1;
  c.points.points = {hints};
  CaptureOptions o = options;
  o.lifted_constants = options.lifted_constants ? constants : nullptr;
  o.input_metas = symbolic_inputs(ex, c, hints);
  o.symbol_sources = c.points.sources;
  o.shape_guards = &c.size_guards;
  std::unique_ptr<Graph> g;
  try {
    g = capture(fn, ex, o);
  } catch (const std::exception& e) {
    *why = e.what();
  }
  auto pinned = std::find_if(c.size_guards.begin(), c.size_guards.end(),
                             [](const ShapeGuard& x) { return x.pins; });
  if (g && pinned != c.size_guards.end()) {
    *why = "the trace fixes a dynamic size: " + pinned->text;
    g.reset();
  }
  if (!g) c.size_guards.clear();
  return g;
}

std::unique_ptr<Graph> trace_at(const TensorFunction& fn, const std::vector<at::Tensor>& ex,
                                const DynamicCapture& c, const std::vector<int64_t>& point,
                                const CaptureOptions& options, std::vector<at::Tensor>* constants) {
  CaptureOptions o = options;
  o.lifted_constants = options.lifted_constants ? constants : nullptr;
  std::string at_text;
  for (size_t i = 0; i < point.size(); ++i)
    at_text += (i ? ", " : "") + symbol_name(i) + "=" + std::to_string(point[i]);
  try {
    return capture(fn, inputs_at(ex, c, point), o);
  } catch (const std::exception& e) {
    throw Error("dynamic capture: the function fails when traced at the sizes " + at_text + ": " +
                e.what());
  }
}

void check_same_constants(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  AOTGRAD_CHECK(a.size() == b.size(), "dynamic capture: the function reads ", a.size(),
                " tensor constants at one size and ", b.size(), " at another");
  for (size_t k = 0; k < a.size(); ++k)
    AOTGRAD_CHECK(
        a[k].sizes() == b[k].sizes() && a[k].dtype() == b[k].dtype() && at::equal(a[k], b[k]),
        "dynamic capture: the tensor constant _tensor_constant", k,
        " changes with the dynamic sizes; make it from an input instead");
}

// Whether the traces agree in value at their points (symbolize.h's without_layouts): they
// unify once libtorch's reshape decisions and the layouts are set aside.
bool same_values(const std::vector<const Graph*>& traces, const TracePoints& p) {
  std::vector<std::unique_ptr<Graph>> plain;
  std::vector<const Graph*> ptrs;
  for (const Graph* t : traces) {
    plain.push_back(without_layouts(*t));
    if (!plain.back()) return false;
    ptrs.push_back(plain.back().get());
  }
  try {
    symbolize(ptrs, p);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The points the traces are taken at: `base` (each value 2 or more) and two others chosen so that
// no two symbols are affinely related over them.
std::vector<std::vector<int64_t>> three_points(const std::vector<int64_t>& base) {
  std::vector<std::vector<int64_t>> points(3, base);
  for (size_t i = 0; i < base.size(); ++i) {
    const auto k = static_cast<int64_t>(i);
    points[1][i] = base[i] + 1 + k;
    points[2][i] = base[i] + 3 + 3 * k + k * k;
  }
  return points;
}

// `c` with the traces at three points that a unified graph has: `c` itself when it was unified, a
// copy traced at its hints and two other points (with `ex`'s dtypes and layouts) when it was
// traced once symbolically.
DynamicCapture with_traces(const DynamicCapture& c, const TensorFunction& fn,
                           const std::vector<at::Tensor>& ex, const CaptureOptions& options) {
  if (!c.traces.empty()) return c;
  DynamicCapture u = c;
  u.points.points = three_points(c.points.points.at(0));
  std::vector<at::Tensor> constants;
  for (const std::vector<int64_t>& point : u.points.points)
    u.traces.push_back(trace_at(fn, ex, u, point, options, &constants));
  return u;
}

// The dimensions' symbols traced with symbol i = size / divisors[i] (c.points.sources and the
// example sizes `sizes` set): the points, the traces and the unified graph into `c`. Throws Error
// when the function fails at a point or the traces do not unify.
void trace_and_unify(const TensorFunction& fn, const std::vector<at::Tensor>& ex,
                     const std::vector<int64_t>& sizes, const std::vector<int64_t>& divisors,
                     const CaptureOptions& options, DynamicCapture& c,
                     std::vector<at::Tensor>* lifted) {
  // Sizes 0 and 1 are traced at other values (never affinely related to the rest) and checked
  // by a trace at their own.
  const size_t n = sizes.size();
  std::vector<int64_t> values(n), base(n);
  bool small = false;
  for (size_t i = 0; i < n; ++i) {
    c.points.sources[i].divisor = divisors[i];
    values[i] = sizes[i] / divisors[i];
    base[i] = values[i] >= 2 ? values[i] : 16 + 5 * static_cast<int64_t>(i);
    small = small || values[i] < 2;
  }
  c.points.points = three_points(base);
  if (small) c.points.points.push_back(values);
  c.traces.clear();
  std::vector<std::vector<at::Tensor>> constants(c.points.points.size());
  std::vector<const Graph*> traces;
  for (size_t t = 0; t < c.points.points.size(); ++t) {
    c.traces.push_back(trace_at(fn, ex, c, c.points.points[t], options, &constants[t]));
    traces.push_back(c.traces.back().get());
    if (t) check_same_constants(constants[0], constants[t]);
  }
  if (!small) {
    c.graph = symbolize(traces, c.points);
  } else {
    // A size 0 or 1: its trace may take other reshape decisions (a view where the others copy);
    // the graph of the other sizes serves it when the traces agree in value.
    try {
      c.graph = symbolize(traces, c.points);
    } catch (const Error& strict) {
      TracePoints big = c.points;
      big.points.resize(3);
      c.graph = symbolize({traces[0], traces[1], traces[2]}, big);
      if (!same_values(traces, c.points)) throw;
    }
  }
  *lifted = constants[0];
  c.verified_small.assign(n, {});
  for (size_t i = 0; i < n; ++i)
    if (values[i] < 2) c.verified_small[i].push_back(values[i]);
}

// The divisors to try when the function does not trace or unify with every symbol a bare size
// (a view of half the batch, heads that split a width): each symbol alone divided by each of its
// example size's divisors, smallest first (up to 6 each), then every symbol by 2, 4 or 8 where
// they divide; at most 12 tries.
std::vector<std::vector<int64_t>> divisor_tries(const std::vector<int64_t>& sizes) {
  std::vector<std::vector<int64_t>> tries;
  const size_t n = sizes.size();
  for (size_t i = 0; i < n; ++i) {
    int found = 0;
    for (int64_t m = 2; m <= sizes[i] && found < 6; ++m) {
      if (sizes[i] % m != 0) continue;
      std::vector<int64_t> d(n, 1);
      d[i] = m;
      tries.push_back(std::move(d));
      ++found;
    }
  }
  for (int64_t m : {2, 4, 8}) {
    if (n < 2) break;
    bool all = true;
    for (int64_t v : sizes) all = all && v % m == 0;
    if (all) tries.push_back(std::vector<int64_t>(n, m));
  }
  if (tries.size() > 12) tries.resize(12);
  return tries;
}

// Whether `g` depends on where its inputs start in their storage: an as_strided view (its offset
// is absolute) or a read of a storage offset. Otherwise the runtime takes an input at any offset,
// as PyTorch's guards do not check offsets.
bool reads_storage_offsets(const Graph& g) {
  for (const Node* n : g.nodes()) {
    if (n->kind() != NodeKind::Call) continue;
    const std::string& op = n->op()->schema.name;
    if (op.rfind("aten::as_strided", 0) == 0 || op == "aten::sym_storage_offset") return true;
  }
  return false;
}

// "L['x'].size()[0]": an input dimension as PyTorch's guards print it.
std::string size_text(const std::vector<Node*>& ph, size_t input, int64_t dim) {
  return "L['" + ph[input]->name() + "'].size()[" + std::to_string(dim) + "]";
}

// "Eq(Mod(L['x'].size()[0], 2), 0)": the guard of a size traced as a multiple of its symbol.
std::string divisor_guard(const std::vector<Node*>& ph, const SymbolSource& s) {
  return "Eq(Mod(" + size_text(ph, s.input, s.dim) + ", " + std::to_string(s.divisor) + "), 0)";
}

}  // namespace

DynamicCapture capture_dynamic(const TensorFunction& fn,
                               const std::vector<at::Tensor>& example_inputs,
                               std::vector<DynamicDim> dims, const CaptureOptions& options,
                               DynamicTrace how) {
  DynamicCapture c;
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  AOTGRAD_CHECK(!dims.empty(), "dynamic capture: no dimension is dynamic");
  std::vector<int64_t> values;  // each symbol's example size
  for (DynamicDim& d : dims) {
    AOTGRAD_CHECK(d.input < example_inputs.size(), "dynamic capture: dimension ", d.dim,
                  " of input ", d.input, ", but there are ", example_inputs.size(), " inputs");
    const at::Tensor& t = example_inputs[d.input];
    const int64_t n = t.dim();
    AOTGRAD_CHECK(d.dim >= -n && d.dim < n, "dynamic capture: ", where(options, d.input), " has ",
                  n, " dimensions, no dimension ", d.dim);
    if (d.dim < 0) d.dim += n;
    AOTGRAD_CHECK(t.unsafeGetTensorImpl()->is_non_overlapping_and_dense(),
                  "dynamic capture: ", where(options, d.input), " (strides ", c10::str(t.strides()),
                  ") is not dense, so it cannot be traced at other sizes");
    for (size_t j = 0; j < example_inputs.size(); ++j)
      AOTGRAD_CHECK(j == d.input || !example_inputs[j].has_storage() || !t.has_storage() ||
                        !example_inputs[j].storage().is_alias_of(t.storage()),
                    "dynamic capture: ", where(options, d.input), " shares a storage with ",
                    where(options, j), "; such inputs are compiled with static sizes");
    const int64_t v = t.size(d.dim);
    auto it = std::find(values.begin(), values.end(), v);
    size_t sym = static_cast<size_t>(it - values.begin());
    if (it == values.end()) {
      values.push_back(v);
      c.points.sources.push_back({d.input, d.dim});
    }
    c.dims.emplace_back(d, sym);
  }
  // Every symbol a bare size first; a function that needs sizes divisible by some m (a view of
  // half the batch) is traced again with the symbol size / m (Note [Unifying traces]).
  std::vector<at::Tensor> constants;
  bool small = false;
  for (int64_t v : values) small = small || v < 2;
  if (how != DynamicTrace::Unified) {
    if (small)
      c.unified_because = "a dynamic size is 0 or 1 (symbols stand for sizes 2 and up)";
    else if (std::unique_ptr<Graph> g = trace_symbolic(fn, example_inputs, c, values, options,
                                                       &constants, &c.unified_because))
      c.graph = std::move(g), c.symbolic_trace = true;
    AOTGRAD_CHECK(c.graph || how != DynamicTrace::Symbolic,
                  "dynamic capture: one symbolic trace: ", c.unified_because);
  }
  if (c.graph) {
    c.verified_small.assign(values.size(), {});
  } else {
    try {
      trace_and_unify(fn, example_inputs, values, std::vector<int64_t>(values.size(), 1), options,
                      c, &constants);
    } catch (const Error&) {
      bool done = false;
      for (const std::vector<int64_t>& d : divisor_tries(values)) {
        try {
          trace_and_unify(fn, example_inputs, values, d, options, c, &constants);
          done = true;
          break;
        } catch (const Error&) {
        }
      }
      if (!done) throw;  // the error of the first attempt, with every symbol a bare size
    }
  }
  // An example at a storage offset (a slice of a batch) was traced at offset 0: the function traced
  // at its own offset must be the same program, so that the offset is no part of the guards.
  bool offset = false;
  for (const auto& [d, sym] : c.dims) offset = offset || example_inputs[d.input].storage_offset();
  if (offset) {
    std::vector<at::Tensor> ignored;
    std::unique_ptr<Graph> own =
        trace_at(fn, example_inputs, DynamicCapture{}, {}, options, &ignored);
    const DynamicCapture u = with_traces(c, fn, example_inputs, options);
    std::vector<const Graph*> traces;
    for (const auto& t : u.traces) traces.push_back(t.get());
    traces.push_back(own.get());
    TracePoints p = u.points;
    p.points.push_back(p.points[0]);
    AOTGRAD_CHECK(same_values(traces, p),
                  "dynamic capture: the function traced at its inputs' "
                  "storage offsets is another program than at offset 0 (does it read an offset?)");
  }
  c.offset_free = !reads_storage_offsets(*c.graph);
  AOTGRAD_CHECK(!offset || c.offset_free, "dynamic capture: an input is at a storage offset and ",
                "the function takes an as_strided view or reads an offset, so its traces at ",
                "offset 0 do not stand for it");
  if (options.lifted_constants) *options.lifted_constants = constants;
  std::vector<Node*> ph = c.graph->placeholders();
  for (size_t i = 0; i < values.size(); ++i) c.guards.push_back("2 <= " + symbol_name(i));
  for (const SymbolSource& s : c.points.sources)
    if (s.divisor != 1) c.guards.push_back(divisor_guard(ph, s));
  for (const auto& [d, sym] : c.dims) {
    const SymbolSource& src = c.points.sources[sym];
    if (src.input == d.input && src.dim == d.dim) continue;
    c.guards.push_back(size_text(ph, d.input, d.dim) +
                       " == " + ph[d.input]->tensor_meta().sizes[d.dim].to_string());
  }
  for (const ShapeGuard& g : c.size_guards) c.guards.push_back(g.text);
  return c;
}

std::optional<std::vector<int64_t>> bind_dynamic(const DynamicCapture& c,
                                                 const std::vector<at::Tensor>& args,
                                                 std::string* failed, bool check_small) {
  auto fail = [&](const std::string& why) -> std::optional<std::vector<int64_t>> {
    if (failed) *failed = why;
    return std::nullopt;
  };
  std::vector<Node*> ph = c.graph->placeholders();
  size_t inputs = 0;
  while (inputs < ph.size() && !ph[inputs]->info().lifted_constant) ++inputs;
  if (args.size() != inputs)
    return fail(std::to_string(args.size()) + " arguments, not " + std::to_string(inputs));
  std::vector<int64_t> values;
  for (size_t i = 0; i < c.points.sources.size(); ++i) {
    const SymbolSource& s = c.points.sources[i];
    if (args[s.input].dim() <= s.dim)
      return fail("argument " + std::to_string(s.input) + " has " +
                  std::to_string(args[s.input].dim()) + " dimensions");
    const int64_t size = args[s.input].size(s.dim);
    if (size % s.divisor != 0)
      return fail(divisor_guard(ph, s) + " (" + size_text(ph, s.input, s.dim) + " = " +
                  std::to_string(size) + ")");
    values.push_back(size / s.divisor);
  }
  auto value_of = [&](const std::string& name) -> std::optional<int64_t> {
    for (size_t i = 0; i < values.size(); ++i)
      if (name == symbol_name(i)) return values[i];
    return std::nullopt;
  };
  for (size_t j = 0; j < args.size(); ++j) {
    const TensorMeta& want = ph[j]->tensor_meta();
    TensorMeta got = tensor_meta_of(args[j]);
    const std::string arg = "argument " + std::to_string(j) + " ('" + ph[j]->name() + "')";
    if (got.dtype != want.dtype || !(got.device == want.device) || got.dim() != want.dim() ||
        got.requires_grad != want.requires_grad)
      return fail(arg + " is " + got.annotation() + (got.requires_grad ? " requires_grad" : "") +
                  ", not " + want.annotation() + (want.requires_grad ? " requires_grad" : ""));
    for (int64_t d = 0; d < got.dim(); ++d) {
      const int64_t size = got.sizes[d].value();
      if (want.sizes[d].evaluate(value_of) != size)
        return fail(arg + "'s size " + std::to_string(d) + " is " + std::to_string(size) +
                    ", not " + want.sizes[d].to_string() + " = " +
                    std::to_string(want.sizes[d].evaluate(value_of).value_or(-1)));
      if (size > 1 && want.strides[d].evaluate(value_of) != got.strides[d].value())
        return fail(arg + "'s stride " + std::to_string(d) + " is " + got.strides[d].to_string() +
                    ", not " + want.strides[d].to_string());
    }
    if (!c.offset_free && want.storage_offset.evaluate(value_of) != got.storage_offset.value())
      return fail(arg + "'s storage offset is " + got.storage_offset.to_string() + ", not " +
                  want.storage_offset.to_string());
  }
  for (const ShapeGuard& g : c.size_guards) {
    if (g.holds(value_of) == true) continue;
    std::string at;
    for (size_t i = 0; i < values.size(); ++i)
      at += (i ? ", " : "") + symbol_name(i) + " = " + std::to_string(values[i]);
    return fail(g.text + " (" + at + ")");
  }
  for (size_t i = 0; check_small && i < values.size(); ++i) {
    const auto& ok = c.verified_small[i];
    if (values[i] < 2 && std::find(ok.begin(), ok.end(), values[i]) == ok.end())
      return fail("2 <= " + symbol_name(i) + " (" + symbol_name(i) + " = " +
                  std::to_string(values[i]) + ")");
  }
  return values;
}

bool same_graph_at(const DynamicCapture& c, const TensorFunction& fn,
                   const std::vector<at::Tensor>& args, const std::vector<int64_t>& values,
                   const CaptureOptions& options) {
  CaptureOptions o = options;
  std::vector<at::Tensor> constants;
  o.lifted_constants = options.lifted_constants ? &constants : nullptr;
  std::unique_ptr<Graph> now;
  try {
    now = capture(fn, args, o);
  } catch (const std::exception&) {
    return false;
  }
  if (options.lifted_constants) {
    try {
      check_same_constants(*options.lifted_constants, constants);
    } catch (const Error&) {
      return false;
    }
  }
  DynamicCapture u;
  try {
    u = with_traces(c, fn, args, options);
  } catch (const std::exception&) {
    return false;
  }
  std::vector<const Graph*> traces;
  for (const auto& t : u.traces) traces.push_back(t.get());
  traces.push_back(now.get());
  TracePoints p = u.points;
  p.points.push_back(values);
  try {
    if (print_graph(*symbolize(traces, p)) == print_graph(*c.graph)) return true;
  } catch (const Error&) {
  }
  return same_values(traces, p);
}

}  // namespace aotgrad

// aotgrad: metadata of ops without a declared meta function, from libtorch's Meta or CPU kernels.
#include "aotgrad/providers/fallback_meta.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <mutex>
#include <unordered_map>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/graph.h"
#include "aotgrad/providers/aten_call.h"
#include "aotgrad/providers/dispatcher_ops.h"
#include "aotgrad/providers/sym_node.h"

namespace aotgrad {
namespace {

// The cache key of a call: the op, then each argument -- tensors by their metadata, everything
// else by its printed value.
void append_key(std::string& key, const Arg& a) {
  if (a.is_node()) {
    const ValueMeta& m = a.node->meta();
    if (m.is_tensor()) {
      m.tensor.append_annotation(key);
      key += '@';
      key += m.tensor.storage_offset.to_string();
    } else {
      key += m.annotation();
    }
    return;
  }
  if (a.is_list()) {
    key += '[';
    for (const Arg& e : a.list) {
      append_key(key, e);
      key += ',';
    }
    key += ']';
    return;
  }
  append_arg(key, a);
}

std::vector<int64_t> concrete(const SymIntVector& v) {
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (const SymInt& s : v) out.push_back(s.value());
  return out;
}

// What a stand-in on cpu holds: zeros; or, when a kernel rejects zeros (cholesky wants a positive
// definite matrix, multinomial a distribution), identity matrices in the last two dimensions of a
// floating tensor of 2 or more dimensions and ones elsewhere.
enum class Fill { kZeros, kIdentity };

// A tensor of `m`'s dtype, sizes, strides and storage offset on `device` (meta, or filled on
// cpu).
at::Tensor stand_in(const TensorMeta& m, c10::Device device, Fill fill = Fill::kZeros) {
  std::vector<int64_t> sizes = concrete(m.sizes), strides = concrete(m.strides);
  int64_t offset = m.storage_offset.value();
  int64_t extent = offset + 1;
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) empty = true;
    extent += (sizes[d] - 1) * strides[d];
  }
  if (empty) extent = offset;
  auto options = at::TensorOptions().dtype(to_c10(m.dtype)).device(device);
  at::Tensor base = at::empty({std::max<int64_t>(extent, 0)}, options);
  if (device.is_cpu()) base.zero_();
  at::Tensor t = base.as_strided(sizes, strides, offset);
  if (device.is_cpu() && fill == Fill::kIdentity && !empty) {
    if (sizes.size() >= 2 && is_floating(m.dtype)) {
      at::Tensor eye = at::eye(sizes[sizes.size() - 2], sizes.back(), options);
      t.copy_(eye.expand(sizes));
    } else {
      t.fill_(1);
    }
  }
  return t;
}

// The device of the op's results: its Device argument, else its first tensor's, else cpu.
Device result_device(const MetaArgs& a) {
  const auto& sargs = a.op().schema.args;
  for (size_t i = 0; i < sargs.size(); ++i)
    if (sargs[i].type.base == BaseType::Device && !sargs[i].type.list && !a.is_none(i))
      if (auto d = a.device(i)) return *d;
  for (size_t i = 0; i < a.size(); ++i) {
    Device found;
    bool seen = false;
    a.arg(i).for_each_node([&](const Node* n) {
      if (!seen && n->meta().is_tensor()) {
        found = n->meta().tensor.device;
        seen = true;
      }
    });
    if (seen) return found;
  }
  return Device{};
}

void set_device(ValueMeta& m, const Device& d) {
  if (m.is_tensor()) {
    m.tensor.device = d;
    m.tensor.requires_grad = false;
  }
  for (ValueMeta& e : m.elems) set_device(e, d);
}

std::string libtorch_message(const std::exception& e) {
  if (auto* ce = dynamic_cast<const c10::Error*>(&e)) return ce->what_without_backtrace();
  return e.what();
}

// Runs the op on stand-ins on `device` (meta or cpu); Device arguments become `device` too, so a
// factory makes no real tensor on the meta path.
ValueMeta run_on(const MetaArgs& a, const c10::OperatorHandle& handle, c10::Device device,
                 Fill fill = Fill::kZeros) {
  const OpDef& op = a.op();
  const auto& sargs = op.schema.args;
  NodeValueFn lookup = [&](const Node& n) -> c10::IValue {
    const ValueMeta& m = n.meta();
    if (m.is_tensor()) return stand_in(m.tensor, device, fill);
    if (m.kind == ValueMeta::Kind::SymInt && m.sym.is_concrete()) return c10::IValue(m.sym.value());
    throw Error("the value of " + n.describe() + " (" + m.describe() +
                ") is not known before running the graph");
  };
  std::vector<c10::IValue> stack;
  stack.reserve(sargs.size());
  for (size_t i = 0; i < sargs.size(); ++i) {
    if (sargs[i].type.base == BaseType::Device && !sargs[i].type.list && !a.is_none(i)) {
      stack.emplace_back(device);
      continue;
    }
    stack.push_back(to_ivalue(sargs[i].type, a.arg(i), lookup));
  }
  at::AutoDispatchBelowADInplaceOrView below_autograd;  // the stand-ins need no autograd
  handle.callBoxed(stack);
  std::vector<ValueMeta> results;
  for (const c10::IValue& v : stack) results.push_back(value_meta_of(v));
  ValueMeta m = results.empty()       ? ValueMeta::none()
                : results.size() == 1 ? std::move(results[0])
                                      : ValueMeta::tuple(std::move(results));
  set_device(m, result_device(a));
  return m;
}

}  // namespace

ValueMeta fallback_meta(const MetaArgs& a) {
  const OpDef& op = a.op();
  if (op.has_tag(kDataDependentOutput))
    throw Error(
        "its result is a value read from its inputs' data (data_dependent_output); a graph "
        "cannot hold it as a constant");
  std::string key = op.name;
  for (size_t i = 0; i < a.size(); ++i) {
    key += '|';
    const Arg& arg = a.arg(i);
    arg.for_each_node([&](const Node* n) {
      if (n->meta().is_tensor() && has_symbolic_sizes(n->meta().tensor))
        throw Error(n->describe() + " has symbolic sizes (" + n->meta().tensor.annotation() +
                    "), which only a declared meta function handles");
    });
    append_key(key, arg);
  }
  static std::mutex mu;
  static std::unordered_map<std::string, ValueMeta> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = cache.find(key); it != cache.end()) {
      count_provider_event(ProviderEvent::kMetaCacheHit);
      return it->second;
    }
  }
  auto handle = c10::Dispatcher::singleton().findSchema({op.schema.name, op.schema.overload});
  if (!handle) throw Error("libtorch has no such operator overload");
  ValueMeta m;
  try {
    m = run_on(a, *handle, c10::Device(c10::kMeta));
    count_provider_event(ProviderEvent::kMetaKernel);
  } catch (const std::exception& e) {
    // A result whose shape depends on the inputs' values (nonzero, masked_select, index with a
    // bool mask) has a Meta kernel only where the shape does not; zeros would give a wrong one.
    if (op.has_tag(kDynamicOutputShape))
      throw Error(
          "the shape of its result depends on its inputs' values (dynamic_output_shape), which "
          "aotgrad cannot know before the graph runs (" +
          libtorch_message(e) + ")");
    // Running an effectful op's kernel to learn its metadata would make its effect happen at
    // compile time (Note [Effect tokens]).
    if (op.has_tag(kEffectful))
      throw Error(
          "it is effectful and has no Meta kernel: aotgrad will not run its CPU kernel (and its "
          "effect) to learn its result's metadata; give it a Meta kernel or a meta function "
          "(register_custom_op)");
    // No Meta kernel, or one that reads data: the CPU kernel on zeros, then on identities (see
    // Fill); the error on zeros (if both fail) is the one a user would see running the op.
    try {
      m = run_on(a, *handle, c10::Device(c10::kCPU));
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string on_zeros = libtorch_message(e);
      try {
        m = run_on(a, *handle, c10::Device(c10::kCPU), Fill::kIdentity);
      } catch (const std::exception&) {
        throw Error(on_zeros);
      }
    }
    count_provider_event(ProviderEvent::kMetaCpuKernel);
  }
  std::lock_guard<std::mutex> lock(mu);
  cache.emplace(std::move(key), m);
  return m;
}

}  // namespace aotgrad

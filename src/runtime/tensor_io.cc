// aotgrad: tensor file records <-> libtorch tensors, and seeded random inputs.
#include "aotgrad/runtime/tensor_io.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstring>

#include "aotgrad/ir/error.h"
#include "aotgrad/providers/aten_call.h"

namespace aotgrad {

at::Tensor to_tensor(const TensorRecord& rec) {
  at::Tensor t = at::empty(rec.shape, at::TensorOptions().dtype(to_c10(rec.dtype)));
  AOTGRAD_CHECK(static_cast<size_t>(t.nbytes()) == rec.data.size(), "tensor '", rec.name,
                "': ", rec.data.size(), " bytes for a tensor of ", t.nbytes());
  if (!rec.data.empty()) std::memcpy(t.data_ptr(), rec.data.data(), rec.data.size());
  return t;
}

TensorRecord to_record(const std::string& name, const at::Tensor& t) {
  AOTGRAD_CHECK(t.defined(), "output '", name, "' is an undefined tensor");
  at::Tensor c = t.detach().to(at::kCPU).contiguous();
  TensorRecord rec;
  rec.name = name;
  rec.dtype = from_c10(c.scalar_type());
  rec.shape.assign(c.sizes().begin(), c.sizes().end());
  rec.data.assign(static_cast<const char*>(c.data_ptr()), c.nbytes());
  return rec;
}

at::Tensor random_tensor(const TensorMeta& meta, uint64_t seed) {
  std::vector<int64_t> sizes, strides;
  // A size without a hint takes every symbol as 2, so that the inputs agree (s0 and 2*s0: 2, 4).
  auto two = [](const std::string&) -> std::optional<int64_t> { return 2; };
  for (auto& s : meta.sizes) sizes.push_back(s.hint().value_or(s.evaluate(two).value_or(2)));
  bool concrete_strides = true;
  for (auto& s : meta.strides) {
    concrete_strides = concrete_strides && s.is_concrete();
    strides.push_back(s.hint_or(1));
  }
  auto opts = at::TensorOptions().dtype(to_c10(meta.dtype));
  at::Tensor t =
      concrete_strides ? at::empty_strided(sizes, strides, opts) : at::empty(sizes, opts);
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  if (is_floating(meta.dtype) || is_complex(meta.dtype))
    t.normal_(0, 1, gen);
  else
    t.random_(0, 2, gen);
  return t;
}

}  // namespace aotgrad

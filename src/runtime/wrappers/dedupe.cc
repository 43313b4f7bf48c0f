// aotgrad: the AOTDedupeWrapper -- arguments that are one tensor become one input.
#include "aotgrad/runtime/wrappers/dedupe.h"

namespace aotgrad {

DedupedArgs DedupedArgs::of(const std::vector<at::Tensor>& args) {
  DedupedArgs d;
  d.position.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    d.position[i] = static_cast<int>(d.unique.size());
    for (size_t k = 0; k < d.unique.size(); ++k)
      if (args[d.unique[k]].unsafeGetTensorImpl() == args[i].unsafeGetTensorImpl())
        d.position[i] = static_cast<int>(k);
    if (d.position[i] == static_cast<int>(d.unique.size())) d.unique.push_back(i);
  }
  return d;
}

std::vector<at::Tensor> DedupedArgs::distinct(const std::vector<at::Tensor>& args) const {
  std::vector<at::Tensor> out;
  out.reserve(unique.size());
  for (size_t i : unique) out.push_back(args[i]);
  return out;
}

DedupedArgs::TensorFunction DedupedArgs::on_distinct(TensorFunction fn) const {
  return [fn = std::move(fn), position = position](const std::vector<at::Tensor>& d) {
    std::vector<at::Tensor> full;
    full.reserve(position.size());
    for (int p : position) full.push_back(d[p]);
    return fn(full);
  };
}

}  // namespace aotgrad

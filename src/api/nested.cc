// aotgrad: aot_function over nested inputs and outputs.
#include "aotgrad/nested.h"

#include <map>
#include <mutex>
#include <optional>

namespace aotgrad {

struct AOTNestedFunction::State {
  NestedFunction fn;
  AOTConfig config;
  // Per input structure: its flat function and the output structure its captures gave.
  struct Entry {
    std::unique_ptr<AOTFunction> flat;
    std::shared_ptr<std::optional<TreeSpec>> out_spec;
  };
  mutable std::mutex mu;
  std::map<std::string, Entry> by_structure;
};

namespace {

c10::IValue pack_args(const std::vector<c10::IValue>& args) {
  return c10::ivalue::Tuple::create(std::vector<c10::IValue>(args.begin(), args.end()));
}

}  // namespace

AOTNestedFunction::AOTNestedFunction(NestedFunction fn, AOTConfig config)
    : state_(std::make_shared<State>()) {
  AOTGRAD_CHECK(fn, "aot_function: the function is empty");
  state_->fn = std::move(fn);
  state_->config = std::move(config);
}

c10::IValue AOTNestedFunction::operator()(const std::vector<c10::IValue>& args) const {
  TreeSpec in_spec;
  std::vector<at::Tensor> leaves = tree_flatten(pack_args(args), &in_spec);
  const std::string key = in_spec.str();
  State::Entry* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->by_structure.find(key);
    if (it == state_->by_structure.end()) {
      State::Entry e;
      e.out_spec = std::make_shared<std::optional<TreeSpec>>();
      // The flat function: the arguments rebuilt around the (fake) tensors, the result flattened.
      TensorFunction flat = [fn = state_->fn, in_spec, out = e.out_spec](
                                const std::vector<at::Tensor>& t) -> std::vector<at::Tensor> {
        c10::IValue packed = tree_unflatten(t, in_spec);
        const auto& elems = packed.toTupleRef().elements();
        c10::IValue result = fn(std::vector<c10::IValue>(elems.begin(), elems.end()));
        TreeSpec spec;
        std::vector<at::Tensor> outs = tree_flatten(result, &spec);
        AOTGRAD_CHECK(!out->has_value() || **out == spec, "aot_function: the function returned ",
                      spec.str(), " where it returned ", (*out)->str(),
                      " before for arguments of structure ", in_spec.str());
        *out = std::move(spec);
        return outs;
      };
      e.flat = std::make_unique<AOTFunction>(std::move(flat), state_->config);
      it = state_->by_structure.emplace(key, std::move(e)).first;
    }
    entry = &it->second;  // std::map entries stay put
  }
  std::vector<at::Tensor> outs = (*entry->flat)(leaves);
  AOTGRAD_CHECK(entry->out_spec->has_value(), "aot_function: no output structure was recorded");
  return tree_unflatten(outs, **entry->out_spec);
}

size_t AOTNestedFunction::num_compilations() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  size_t n = 0;
  for (const auto& [key, e] : state_->by_structure) n += e.flat->num_compilations();
  return n;
}

size_t AOTNestedFunction::num_structures() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->by_structure.size();
}

const AOTFunction* AOTNestedFunction::flat_function(const std::vector<c10::IValue>& args) const {
  TreeSpec spec;
  tree_flatten(pack_args(args), &spec);
  std::lock_guard<std::mutex> lock(state_->mu);
  auto it = state_->by_structure.find(spec.str());
  return it == state_->by_structure.end() ? nullptr : it->second.flat.get();
}

AOTNestedFunction aot_function(NestedFunction fn, AOTConfig config) {
  return AOTNestedFunction(std::move(fn), std::move(config));
}

}  // namespace aotgrad

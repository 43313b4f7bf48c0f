// aotgrad: facts users register for their own ops (Note [Custom ops]).
#include "aotgrad/ops/custom_ops.h"

#include <map>
#include <mutex>
#include <set>

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/decomposition.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<const CustomOpFacts>> facts;
  std::set<std::string> effectful;  // register_effectful_op
};

Registry& registry() {
  static Registry r;
  return r;
}

std::string canonical(const std::string& name) {
  std::string s = name;
  if (s.size() > 8 && s.compare(s.size() - 8, 8, ".default") == 0) s.resize(s.size() - 8);
  return s;
}

// Throws unless `key` (from `name`) names a user's op that has not been used yet.
void check_user_op(const std::string& key, const std::string& where) {
  size_t sep = key.find("::");
  if (sep == std::string::npos || sep == 0 || sep + 2 >= key.size())
    throw Error(where + "expected a namespaced op name, as 'mylib::my_op'");
  if (const OpDef* known = aten_ops().find_known(key))
    throw Error(where + (known->provided
                             ? "the op is already in use (register its facts before its first use)"
                             : "the registry declares the op; its facts are not the user's"));
}

}  // namespace

void register_effectful_op(const std::string& name) {
  const std::string key = canonical(name);
  const std::string where = "register_effectful_op('" + name + "'): ";
  check_user_op(key, where);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.effectful.insert(key).second) throw Error(where + "registered twice");
}

bool registered_effectful(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.effectful.count(canonical(name)) > 0;
}

void register_custom_op(const std::string& name, CustomOpFacts facts) {
  const std::string key = canonical(name);
  const std::string where = "register_custom_op('" + name + "'): ";
  size_t sep = key.find("::");
  if (sep == std::string::npos || sep == 0 || sep + 2 >= key.size())
    throw Error(where + "expected a namespaced op name, as 'mylib::my_op'");
  if (!facts.meta && !facts.derivative && !facts.non_differentiable && !facts.decomposition &&
      facts.tags == 0)
    throw Error(where + "no fact given (meta, derivative, decomposition or tags)");
  if (facts.derivative && facts.non_differentiable)
    throw Error(where + "both a derivative and non_differentiable");
  if (const OpDef* known = aten_ops().find_known(key))
    throw Error(where + (known->provided
                             ? "the op is already in use (register its facts before its first use)"
                             : "the registry declares the op; its facts are not the user's"));
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto [it, inserted] =
      r.facts.try_emplace(key, std::make_unique<const CustomOpFacts>(std::move(facts)));
  if (!inserted) throw Error(where + "registered twice");
}

const CustomOpFacts* custom_op_facts(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.facts.find(canonical(name));
  return it == r.facts.end() ? nullptr : it->second.get();
}

void apply_custom_op_facts(OpDef& op) {
  if (registered_effectful(op.name)) op.tags |= kEffectful;
  const CustomOpFacts* f = custom_op_facts(op.name);
  if (!f) return;
  op.tags |= f->tags;
  if (f->meta) op.meta = f->meta;
  if (f->decomposition) op.decomposition = f->decomposition;
  if (f->derivative) {
    op.derivative = f->derivative;
    op.non_differentiable = false;
  } else if (f->non_differentiable) {
    op.derivative = nullptr;
    op.non_differentiable = true;
  }
}

}  // namespace aotgrad

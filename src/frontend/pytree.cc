// aotgrad: nested values as tensor leaves and a structure.
#include "aotgrad/frontend/pytree.h"

#include <sstream>

#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

void flatten(const c10::IValue& v, TreeSpec& spec, std::vector<at::Tensor>& out,
             const std::string& where) {
  if (v.isTensor() && v.toTensor().defined()) {
    spec.kind = TreeSpec::Kind::kTensor;
    out.push_back(v.toTensor());
    return;
  }
  if (v.isTensor() || v.isNone()) {  // an undefined tensor is None, as a C++ optional tensor
    spec.kind = TreeSpec::Kind::kConstant;
    spec.constant = c10::IValue();
    return;
  }
  if (v.isTuple()) {
    spec.kind = TreeSpec::Kind::kTuple;
    const auto& elems = v.toTupleRef().elements();
    spec.children.resize(elems.size());
    for (size_t i = 0; i < elems.size(); ++i)
      flatten(elems[i], spec.children[i], out, where + "[" + std::to_string(i) + "]");
    return;
  }
  if (v.isTensorList() || (v.isList() && !v.isIntList() && !v.isDoubleList() && !v.isBoolList())) {
    spec.kind = TreeSpec::Kind::kList;
    spec.tensor_list = v.isTensorList();
    c10::ArrayRef<c10::IValue> elems = v.toListRef();
    spec.children.resize(elems.size());
    for (size_t i = 0; i < elems.size(); ++i)
      flatten(elems[i], spec.children[i], out, where + "[" + std::to_string(i) + "]");
    return;
  }
  if (v.isGenericDict()) {
    spec.kind = TreeSpec::Kind::kDict;
    for (const auto& item : v.toGenericDict()) {
      AOTGRAD_CHECK(item.key().isString(), where, " is a dict with a key of type ",
                    item.key().tagKind(), "; only string keys are supported");
      spec.keys.push_back(item.key().toStringRef());
      spec.children.emplace_back();
      flatten(item.value(), spec.children.back(), out, where + "['" + spec.keys.back() + "']");
    }
    return;
  }
  if (v.isInt() || v.isDouble() || v.isBool() || v.isString() || v.isIntList() ||
      v.isDoubleList() || v.isBoolList() || v.isDevice()) {
    spec.kind = TreeSpec::Kind::kConstant;
    spec.constant = v;
    return;
  }
  throw Error(where + " is a " + v.tagKind() +
              ", which is neither a tensor, a list, a tuple, a string-keyed dict nor a constant");
}

c10::IValue unflatten(const TreeSpec& spec, const std::vector<at::Tensor>& leaves, size_t& next) {
  switch (spec.kind) {
    case TreeSpec::Kind::kTensor: return leaves.at(next++);
    case TreeSpec::Kind::kConstant: return spec.constant;
    case TreeSpec::Kind::kTuple: {
      std::vector<c10::IValue> elems;
      for (const TreeSpec& c : spec.children) elems.push_back(unflatten(c, leaves, next));
      return c10::ivalue::Tuple::create(std::move(elems));
    }
    case TreeSpec::Kind::kList: {
      if (spec.tensor_list) {
        c10::List<at::Tensor> list;
        for (const TreeSpec& c : spec.children) {
          c10::IValue e = unflatten(c, leaves, next);
          list.push_back(e.isTensor() ? e.toTensor() : at::Tensor());
        }
        return list;
      }
      c10::impl::GenericList list(c10::AnyType::get());
      for (const TreeSpec& c : spec.children) list.push_back(unflatten(c, leaves, next));
      return list;
    }
    case TreeSpec::Kind::kDict: {
      c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
      for (size_t i = 0; i < spec.children.size(); ++i)
        dict.insert(spec.keys[i], unflatten(spec.children[i], leaves, next));
      return dict;
    }
  }
  throw Error("tree_unflatten: a TreeSpec of unknown kind");
}

void print(const TreeSpec& spec, std::ostream& os) {
  switch (spec.kind) {
    case TreeSpec::Kind::kTensor: os << "T"; return;
    case TreeSpec::Kind::kConstant:
      if (spec.constant.isString())
        os << "'" << spec.constant.toStringRef() << "'";
      else
        os << spec.constant;
      return;
    case TreeSpec::Kind::kTuple:
    case TreeSpec::Kind::kList: {
      bool tuple = spec.kind == TreeSpec::Kind::kTuple;
      os << (tuple ? "(" : "[");
      for (size_t i = 0; i < spec.children.size(); ++i) {
        if (i) os << ", ";
        print(spec.children[i], os);
      }
      if (tuple && spec.children.size() == 1) os << ",";
      os << (tuple ? ")" : "]");
      return;
    }
    case TreeSpec::Kind::kDict:
      os << "{";
      for (size_t i = 0; i < spec.children.size(); ++i) {
        os << (i ? ", '" : "'") << spec.keys[i] << "': ";
        print(spec.children[i], os);
      }
      os << "}";
      return;
  }
}

}  // namespace

size_t TreeSpec::num_leaves() const {
  if (kind == Kind::kTensor) return 1;
  size_t n = 0;
  for (const TreeSpec& c : children) n += c.num_leaves();
  return n;
}

std::string TreeSpec::str() const {
  std::ostringstream os;
  print(*this, os);
  return os.str();
}

std::vector<at::Tensor> tree_flatten(const c10::IValue& value, TreeSpec* spec) {
  std::vector<at::Tensor> out;
  TreeSpec s;
  flatten(value, s, out, "the value");
  if (spec) *spec = std::move(s);
  return out;
}

c10::IValue tree_unflatten(const std::vector<at::Tensor>& leaves, const TreeSpec& spec) {
  AOTGRAD_CHECK(leaves.size() == spec.num_leaves(), "tree_unflatten: ", leaves.size(),
                " tensors for a structure of ", spec.num_leaves(), " (", spec.str(), ")");
  size_t next = 0;
  return unflatten(spec, leaves, next);
}

}  // namespace aotgrad

// aotgrad: the builders of view inverses and in-place values, and the shared inverses.
#include "aotgrad/ops/functionalization.h"

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/op_call.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

const Arg& ViewInverseBuilder::arg(size_t i) const {
  AOTGRAD_CHECK(i >= 1 && i < args_.size(), "view inverse of ", op_.name, ": no argument ", i);
  return args_[i];
}

TensorMeta ViewInverseBuilder::view_meta() const {
  std::vector<Arg> args = args_;
  args[0] = Arg(base_);
  ValueMeta m = infer_meta(op_, args);
  if (element_ >= 0) {
    AOTGRAD_CHECK(
        m.kind == ValueMeta::Kind::Tuple && element_ < static_cast<int64_t>(m.elems.size()),
        "view inverse of ", op_.name, ": no element ", element_);
    return m.elems[static_cast<size_t>(element_)].tensor;
  }
  return m.tensor;
}

Arg ViewInverseBuilder::base_sizes() const {
  std::vector<Arg> l;
  for (const SymInt& s : base_meta().sizes) {
    if (!s.is_concrete())
      throw Error("cannot write through '" + op_.name + "' of a tensor with symbolic sizes");
    l.push_back(Arg::of_int(s.value()));
  }
  return Arg::of_list(std::move(l));
}

Node* ViewInverseBuilder::call(const OpDef& op, std::vector<Arg> args,
                               std::vector<std::pair<std::string, Arg>> kwargs) {
  return append_call(g_, op, std::move(args), std::move(kwargs));
}

Node* ViewInverseBuilder::call(std::string_view op, std::vector<Arg> args,
                               std::vector<std::pair<std::string, Arg>> kwargs) {
  return append_call(g_, op, std::move(args), std::move(kwargs));
}

Node* InplaceValueBuilder::call(std::string_view op, std::vector<Arg> args,
                                std::vector<std::pair<std::string, Arg>> kwargs) {
  return append_call(g_, op, std::move(args), std::move(kwargs));
}

Node* identity_view_inverse(ViewInverseBuilder& b) { return b.value(); }

Node* values_with_history(Graph& g, Node* values, Node* history) {
  const OpTable& ops = aten_ops();
  const ScalarType dtype = history->tensor_meta().dtype;
  if (!is_floating(dtype) && !is_complex(dtype))  // no gradient (and no sub of bools)
    return g.add_call(ops.get("aten::detach"), {Arg(values)});
  Node* z = g.add_call(ops.get("aten::sub.Tensor"),
                       {Arg(g.add_call(ops.get("aten::detach"), {Arg(history)})), Arg(history)});
  Node* finite = g.add_call(ops.get("aten::eq.Scalar"), {Arg(z), Arg::of_int(0)});
  z = g.add_call(ops.get("aten::where.self"),
                 {Arg(finite), Arg(z), Arg(g.add_call(ops.get("aten::zeros_like"), {Arg(z)}))});
  return g.add_call(ops.get("aten::sub.Tensor"),
                    {Arg(g.add_call(ops.get("aten::detach"), {Arg(values)})), Arg(z)});
}

Node* reshape_view_inverse(ViewInverseBuilder& b) {
  return b.call("aten::view", {Arg(b.value()), b.base_sizes()});
}

Node* as_strided_view_inverse(ViewInverseBuilder& b) {
  const TensorMeta& base = b.base_meta();
  TensorMeta view = b.view_meta();
  auto concrete = [&](const SymIntVector& v) {
    std::vector<int64_t> out;
    for (const SymInt& s : v) {
      if (!s.is_concrete())
        throw Error("cannot write through '" + b.op().name + "' of a tensor with symbolic sizes");
      out.push_back(s.value());
    }
    return out;
  };
  concrete(base.sizes);
  concrete(base.strides);
  if (!meta::is_non_overlapping_and_dense(base))
    throw Error("cannot write through '" + b.op().name +
                "': its base's elements are not dense (as_strided_scatter would lay it out anew)");
  std::vector<int64_t> offset = concrete({view.storage_offset - base.storage_offset});
  return b.call("aten::as_strided_scatter",
                {Arg(b.base()), Arg(b.value()), Arg::of_ints(concrete(view.sizes)),
                 Arg::of_ints(concrete(view.strides)), Arg::of_int(offset[0])});
}

}  // namespace aotgrad

// aotgrad: named handles of the specific ops passes build graphs with or look for.
#include "aotgrad/ops/known_ops.h"

#include "aotgrad/ops/registry.h"

namespace aotgrad::ops {

#define AOTGRAD_KNOWN_OP(fn, name)                 \
  const OpDef& fn() {                              \
    static const OpDef& op = aten_ops().get(name); \
    return op;                                     \
  }

AOTGRAD_KNOWN_OP(add_Tensor, "aten::add.Tensor")
AOTGRAD_KNOWN_OP(cat, "aten::cat")
AOTGRAD_KNOWN_OP(clone, "aten::clone")
AOTGRAD_KNOWN_OP(convolution_backward, "aten::convolution_backward")
AOTGRAD_KNOWN_OP(copy_, "aten::copy_")
AOTGRAD_KNOWN_OP(div_Scalar, "aten::div.Scalar")
AOTGRAD_KNOWN_OP(div__Scalar, "aten::div_.Scalar")
AOTGRAD_KNOWN_OP(lift_fresh, "aten::lift_fresh")
AOTGRAD_KNOWN_OP(lift_fresh_copy, "aten::lift_fresh_copy")
AOTGRAD_KNOWN_OP(new_empty, "aten::new_empty")
AOTGRAD_KNOWN_OP(reshape, "aten::reshape")
AOTGRAD_KNOWN_OP(reshape_alias, "aten::_reshape_alias")
AOTGRAD_KNOWN_OP(slice_Tensor, "aten::slice.Tensor")
AOTGRAD_KNOWN_OP(split_with_sizes, "aten::split_with_sizes")
AOTGRAD_KNOWN_OP(sym_size_int, "aten::sym_size.int")
AOTGRAD_KNOWN_OP(to_copy, "aten::_to_copy")
AOTGRAD_KNOWN_OP(unsafe_view, "aten::_unsafe_view")
AOTGRAD_KNOWN_OP(view, "aten::view")
AOTGRAD_KNOWN_OP(zeros_like, "aten::zeros_like")

AOTGRAD_KNOWN_OP(sym_add, "operator::add")
AOTGRAD_KNOWN_OP(sym_sub, "operator::sub")
AOTGRAD_KNOWN_OP(sym_mul, "operator::mul")
AOTGRAD_KNOWN_OP(sym_floordiv, "operator::floordiv")

AOTGRAD_KNOWN_OP(all_gather_into_tensor, "_c10d_functional::all_gather_into_tensor")
AOTGRAD_KNOWN_OP(all_reduce, "_c10d_functional::all_reduce")
AOTGRAD_KNOWN_OP(all_reduce_, "_c10d_functional::all_reduce_")
AOTGRAD_KNOWN_OP(reduce_scatter_tensor, "_c10d_functional::reduce_scatter_tensor")
AOTGRAD_KNOWN_OP(wait_tensor, "_c10d_functional::wait_tensor")

#undef AOTGRAD_KNOWN_OP

}  // namespace aotgrad::ops

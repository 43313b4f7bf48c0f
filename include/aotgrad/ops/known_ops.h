// aotgrad: named handles of the specific ops passes build graphs with or look for.
#pragma once

#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/op.h"

namespace aotgrad::ops {

// Each is the registry's declaration (aten_ops()), looked up once. A pass uses one where it means
// that op itself -- it inserts it, or recognises a structure it (or PyTorch's partitioner) builds
// from it -- rather than a property other ops may share (those are facts on OpDef: tags, flops,
// scratch, fill, identity).

const OpDef& add_Tensor();
const OpDef& cat();
const OpDef& clone();
const OpDef& convolution_backward();
const OpDef& copy_();
const OpDef& div_Scalar();
const OpDef& div__Scalar();
const OpDef& lift_fresh();
const OpDef& lift_fresh_copy();
const OpDef& new_empty();
const OpDef& reshape();
const OpDef& reshape_alias();  // aten::_reshape_alias
const OpDef& slice_Tensor();
const OpDef& sym_size_int();  // aten::sym_size.int
const OpDef& split_with_sizes();
const OpDef& to_copy();      // aten::_to_copy
const OpDef& unsafe_view();  // aten::_unsafe_view
const OpDef& view();
const OpDef& zeros_like();

// Python's int arithmetic on SymInts, as FX records it (operator.mul, ...).
const OpDef& sym_add();       // operator::add
const OpDef& sym_sub();       // operator::sub
const OpDef& sym_mul();       // operator::mul
const OpDef& sym_floordiv();  // operator::floordiv

// _c10d_functional's collectives (Note [Functional collectives]).
const OpDef& all_gather_into_tensor();
const OpDef& all_reduce();
const OpDef& all_reduce_();
const OpDef& reduce_scatter_tensor();
const OpDef& wait_tensor();

/// Whether `n` is a call of `op` (this overload).
inline bool is_call(const Node* n, const OpDef& op) {
  return n && n->kind() == NodeKind::Call && n->op() == &op;
}
/// Whether `n` is a call of any overload of `op`'s packet (cat.default, cat.names, ...).
inline bool is_call_of_packet(const Node* n, const OpDef& op) {
  return n && n->kind() == NodeKind::Call && n->op()->schema.name == op.schema.name;
}

}  // namespace aotgrad::ops

// aotgrad: PyTorch 2.x's functional collectives (torch/csrc/distributed/c10d/Functional.cpp):
// all_reduce, all_gather_into_tensor, reduce_scatter_tensor, broadcast and wait_tensor.
//
// Note [Functional collectives]
// A collective returns a new tensor that is only valid after wait_tensor of it: the runtime issues
// the collective on the process group named `group_name` (the world group is '0') and wait_tensor
// waits for its work, so the order of communication is data dependence (§13.31). The ops are
// tagged `collective`: never merged by CSE, never removed as dead, never folded, and never
// recomputed by the min-cut partitioner (ban reason "collective"), since every rank must issue the
// same collectives in the same order. Derivatives are those of PyTorch's autograd collectives for
// a loss that is the sum of every rank's loss: all_reduce's is all_reduce of the grad, all_gather's
// reduce_scatter of it and reduce_scatter's all_gather, each followed by its wait.
#include <set>

#include "aotgrad/ops/cost_util.h"
#include "aotgrad/ops/derivative.h"
#include "aotgrad/ops/formula.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

using meta::one;
using V = FormulaValue;
using Vs = std::vector<FormulaValue>;

// c10d's reduce ops by the names Functional.cpp's to_reduce_op accepts.
void check_reduce_op(const std::string& op) {
  static const std::set<std::string> kOps = {"sum", "avg",  "product", "min",
                                             "max", "band", "bor",     "bxor"};
  if (!kOps.count(op))
    throw Error("Unrecognized reduce_op: '" + op +
                "' (expected sum, avg, product, min, max, band, bor or bxor)");
}

void check_group_name(const std::string& name) {
  if (name.empty()) throw Error("argument 'group_name' must name a process group, got ''");
}

int64_t group_size_of(const MetaArgs& a, size_t i) {
  int64_t n = a.int_value(i);
  if (n < 1) throw Error("argument 'group_size' must be at least 1, got " + std::to_string(n));
  return n;
}

// The collective's result: a fresh contiguous tensor (Functional.cpp clones the input contiguous
// or allocates the output with at::empty).
TensorMeta fresh(const TensorMeta& like, SymIntVector sizes) {
  return meta::empty(sizes, like.dtype, like.device);
}

ValueMeta all_reduce_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  std::string op = a.str(1);
  check_reduce_op(op);
  if (is_complex(x.dtype) && op != "sum" && op != "avg")
    throw Error("all_reduce: reduce_op " + op + " does not support complex tensors");
  check_group_name(a.str(2));
  return one(fresh(x, x.sizes));
}

ValueMeta all_reduce_inplace_meta(const MetaArgs& a) {
  all_reduce_meta(a);  // the same checks
  if (!a.tensor(0).is_contiguous()) throw Error("all_reduce_: the input must be contiguous");
  return one(a.tensor(0));
}

// The output is the inputs of every rank concatenated along dim 0 (a 0-dim input gives
// [group_size]).
ValueMeta all_gather_into_tensor_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  int64_t n = group_size_of(a, 1);
  check_group_name(a.str(2));
  SymIntVector sizes = x.sizes;
  if (sizes.empty())
    sizes.push_back(SymInt(n));
  else
    sizes[0] = sizes[0] * SymInt(n);
  return one(fresh(x, sizes));
}

// The output is this rank's chunk of dim 0 of the reduced input.
ValueMeta reduce_scatter_tensor_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  check_reduce_op(a.str(1));
  int64_t n = group_size_of(a, 2);
  check_group_name(a.str(3));
  if (x.dim() == 0)
    throw Error("reduce_scatter_tensor: the input must have at least one dimension");
  SymIntVector sizes = x.sizes;
  if (sizes[0].is_concrete() && sizes[0].value() % n != 0)
    throw Error("reduce_scatter_tensor: the first dimension of the input (" +
                std::to_string(sizes[0].value()) + ") is not divisible by the group size (" +
                std::to_string(n) + ")");
  sizes[0] = floordiv(sizes[0], SymInt(n));
  return one(fresh(x, sizes));
}

ValueMeta broadcast_meta(const MetaArgs& a) {
  const TensorMeta& x = a.tensor(0);
  int64_t src = a.int_value(1);
  if (src < 0) throw Error("argument 'src' must be a rank, got " + std::to_string(src));
  check_group_name(a.str(2));
  return one(fresh(x, x.sizes));
}

// wait_tensor returns its argument once the collective that produced it is done.
ValueMeta wait_tensor_meta(const MetaArgs& a) {
  TensorMeta t = a.tensor(0);
  t.requires_grad = false;
  return one(t);
}

Node* wait(GradBuilder& b, Node* x) { return b.call("_c10d_functional::wait_tensor", {Arg(x)}); }

// all_reduce_backward(grad, reduce_op, group_name): the gradient of every rank's input is the sum
// (avg: the mean) of every rank's gradient of the result.
V all_reduce_backward(GradBuilder& b, Vs& a) {
  const std::string& op = a[1].arg.str;
  if (op != "sum" && op != "avg")
    throw Error("all_reduce with reduce_op '" + op +
                "' is not differentiable (only sum and avg are)");
  Node* r = b.call("_c10d_functional::all_reduce",
                   {Arg(a[0].node()), Arg::of_str(op), Arg::of_str(a[2].arg.str)});
  return V::tensor(wait(b, r));
}

// all_gather_into_tensor_backward(grad, group_size, group_name): each rank's chunk of every rank's
// gradient, summed.
V all_gather_into_tensor_backward(GradBuilder& b, Vs& a) {
  Node* r = b.call("_c10d_functional::reduce_scatter_tensor",
                   {Arg(a[0].node()), Arg::of_str("sum"), a[1].arg, Arg::of_str(a[2].arg.str)});
  return V::tensor(wait(b, r));
}

// reduce_scatter_tensor_backward(grad, reduce_op, group_size, group_name): every rank's gradient
// of its chunk, gathered (divided by the group size for avg).
V reduce_scatter_tensor_backward(GradBuilder& b, Vs& a) {
  const std::string& op = a[1].arg.str;
  if (op != "sum" && op != "avg")
    throw Error("reduce_scatter_tensor with reduce_op '" + op +
                "' is not differentiable (only sum and avg are)");
  Node* g = wait(b, b.call("_c10d_functional::all_gather_into_tensor",
                           {Arg(a[0].node()), a[2].arg, Arg::of_str(a[3].arg.str)}));
  if (op == "avg") g = b.call("div.Scalar", {Arg(g), a[2].arg});
  return V::tensor(g);
}

// The bytes a collective brings to this rank from the others (the cost model's
// communication_bytes): an all_reduce twice its input (a ring's reduce-scatter and all-gather), an
// all_gather_into_tensor its result, a reduce_scatter_tensor and a broadcast their input; a
// wait_tensor declares none (the collective is priced where it is issued).
double all_reduce_bytes(const MetaArgs& a, const ValueMeta&) {
  const TensorMeta* in = cost::tensor_at(a, 0);
  return in ? 2 * cost::bytes(*in) : 0;
}
double all_gather_bytes(const MetaArgs&, const ValueMeta& result) {
  return result.is_tensor() ? cost::bytes(result.tensor) : 0;
}
double input_bytes(const MetaArgs& a, const ValueMeta&) {
  const TensorMeta* in = cost::tensor_at(a, 0);
  return in ? cost::bytes(*in) : 0;
}

}  // namespace

void register_collective_ops(OpTable& t) {
  add_grad_helper("all_reduce_backward", all_reduce_backward);
  add_grad_helper("all_gather_into_tensor_backward", all_gather_into_tensor_backward);
  add_grad_helper("reduce_scatter_tensor_backward", reduce_scatter_tensor_backward);
  t.def("_c10d_functional::all_reduce(Tensor input, str reduce_op, str group_name) -> Tensor")
      .communication_bytes(all_reduce_bytes)
      .tags(kCollective)
      .meta(all_reduce_meta)
      .inplace("_c10d_functional::all_reduce_")
      .derivative(formula("input: all_reduce_backward(grad, reduce_op, group_name)"));
  // In place, as PyTorch 2.x's: the data-parallel pass reduces the buckets the graph owns so.
  t.def(
       "_c10d_functional::all_reduce_(Tensor(a!) input, str reduce_op, str group_name) -> "
       "Tensor(a!)")
      .communication_bytes(all_reduce_bytes)
      .tags(kCollective | kInplace)
      .meta(all_reduce_inplace_meta);
  t.def(
       "_c10d_functional::all_gather_into_tensor(Tensor input, int group_size, str group_name) -> "
       "Tensor")
      .communication_bytes(all_gather_bytes)
      .tags(kCollective)
      .meta(all_gather_into_tensor_meta)
      .derivative(formula("input: all_gather_into_tensor_backward(grad, group_size, group_name)"));
  t.def(
       "_c10d_functional::reduce_scatter_tensor(Tensor input, str reduce_op, int group_size, str "
       "group_name) -> Tensor")
      .communication_bytes(input_bytes)
      .tags(kCollective)
      .meta(reduce_scatter_tensor_meta)
      .derivative(formula(
          "input: reduce_scatter_tensor_backward(grad, reduce_op, group_size, group_name)"));
  // PyTorch gives broadcast no autograd formula (its gradient is a reduce to `src`).
  t.def("_c10d_functional::broadcast(Tensor input, int src, str group_name) -> Tensor")
      .communication_bytes(input_bytes)
      .tags(kCollective)
      .meta(broadcast_meta)
      .derivative(formula("input: not_implemented(\"broadcast\")"));
  t.def("_c10d_functional::wait_tensor(Tensor tensor) -> Tensor")
      .tags(kCollective)
      .meta(wait_tensor_meta)
      .derivative(formula("tensor: grad"));
}

}  // namespace aotgrad

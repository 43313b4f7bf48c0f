// aotgrad: DecompBuilder -- the graph-building side of decompositions.
#include "aotgrad/ops/decomposition.h"

#include "aotgrad/ir/error.h"
#include "aotgrad/ops/meta_util.h"
#include "aotgrad/ops/op_call.h"

namespace aotgrad {

Node* DecompBuilder::input(size_t i) const {
  const Arg& a = node_.args().at(i);
  AOTGRAD_CHECK(a.is_node(), node_.describe(), ": decomposition reads argument '",
                op().schema.args.at(i).name, "' as a value, but it is ", arg_to_string(a));
  return a.node;
}

int64_t DecompBuilder::int_arg(size_t i) const {
  const Arg& a = node_.args().at(i);
  AOTGRAD_CHECK(a.kind == Arg::Kind::Int || a.kind == Arg::Kind::Bool, node_.describe(),
                ": argument '", op().schema.args.at(i).name, "' must be a constant int, got ",
                arg_to_string(a));
  return a.i;
}

double DecompBuilder::float_arg(size_t i) const {
  const Arg& a = node_.args().at(i);
  if (a.kind == Arg::Kind::Float) return a.f;
  return static_cast<double>(int_arg(i));
}

bool DecompBuilder::bool_arg(size_t i) const { return int_arg(i) != 0; }

Node* DecompBuilder::call(std::string_view op_name, std::vector<Arg> args,
                          std::vector<std::pair<std::string, Arg>> kwargs) {
  try {
    Node* n = append_call(g_, op_name, std::move(args), std::move(kwargs));
    n->info().origin = node_.name();
    // What a checkpointed node decomposes to is in the same checkpointed region (§13.25).
    n->info().recompute = node_.info().recompute;
    return n;
  } catch (const Error& e) {
    throw Error("decomposition of " + node_.describe() + ": " + e.message());
  }
}

Node* DecompBuilder::getitem(Node* tuple, int64_t index) { return g_.add_getitem(tuple, index); }

Node* DecompBuilder::reshape(Node* x, const SymIntVector& sizes) {
  if (meta::compute_view_strides(x->tensor_meta(), sizes))
    return call("view.default", {Arg(x), Arg::of_symints(sizes)});
  Node* c = call("clone.default", {Arg(x)},
                 {{"memory_format", Arg::of_memory_format(MemoryFormat::Contiguous)}});
  return call("_unsafe_view.default", {Arg(c), Arg::of_symints(sizes)});
}

}  // namespace aotgrad

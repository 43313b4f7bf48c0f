// aotgrad: the partitioner's op classes, from PyTorch's get_default_op_list.
#include "aotgrad/transforms/op_classes.h"

#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

std::unordered_set<std::string> aten(std::initializer_list<const char*> names) {
  std::unordered_set<std::string> s;
  for (const char* n : names) s.insert(std::string("aten::") + n);
  return s;
}

void add_all(std::unordered_set<std::string>& to, const std::unordered_set<std::string>& from) {
  to.insert(from.begin(), from.end());
}

OpClasses make_defaults() {
  OpClasses c;
  // PyTorch's default_recomputable_ops (the nvfuser list, then the inductor additions).
  c.recomputable = aten({"add",         "sub",         "div",
                         "atan2",       "mul",         "max",
                         "min",         "pow",         "remainder",
                         "fmod",        "__and__",     "__or__",
                         "__xor__",     "__lshift__",  "__rshift__",
                         "eq",          "ne",          "ge",
                         "gt",          "le",          "lt",
                         "abs",         "bitwise_not", "ceil",
                         "floor",       "frac",        "neg",
                         "relu",        "round",       "silu",
                         "trunc",       "log",         "log10",
                         "log1p",       "log2",        "lgamma",
                         "exp",         "expm1",       "erf",
                         "erfc",        "cos",         "acos",
                         "cosh",        "sin",         "asin",
                         "sinh",        "tan",         "atan",
                         "tanh",        "atanh",       "sqrt",
                         "rsqrt",       "reciprocal",  "sigmoid",
                         "softplus",    "threshold",   "threshold_backward",
                         "clamp",       "where",       "lerp",
                         "addcmul",     "gelu",        "gelu_backward",
                         "sum",         "mean",        "_grad_sum_to_size",
                         "sum_to_size", "amax",        "to",
                         "type_as",     "squeeze",     "unsqueeze",
                         "rsub",        "_to_copy"});
  add_all(c.recomputable, aten({"clone",
                                "full_like",
                                "var",
                                "std",
                                "select",
                                "_unsafe_view",
                                "view",
                                "expand",
                                "slice",
                                "reshape",
                                "broadcast_tensors",
                                "scalar_tensor",
                                "ones",
                                "new_zeros",
                                "lift_fresh_copy",
                                "arange",
                                "triu",
                                "var_mean",
                                "isinf",
                                "any",
                                "full",
                                "as_strided",
                                "zeros",
                                "empty",
                                "empty_like",
                                "argmax",
                                "maximum",
                                "index",
                                "gather",
                                "zeros_like"}));
  c.recomputable.insert({"prims::div", "prims::convert_element_type", "prims::var", "prims::sum",
                         "prims::broadcast_in_dim", "prims::iota"});
  c.view = aten({"squeeze", "unsqueeze", "alias", "view", "slice", "t", "expand", "as_strided",
                 "permute", "select", "split"});
  c.view.insert("prims::broadcast_in_dim");
  add_all(c.recomputable, c.view);
  c.normalization = aten({"native_batch_norm", "_native_batch_norm_legit_functional",
                          "_native_batch_norm_legit", "native_layer_norm", "native_group_norm"});
  c.random = aten({"native_dropout", "rand_like", "randn_like"});
  c.compute_intensive = aten({"mm", "convolution", "convolution_backward", "bmm", "addmm",
                              "_scaled_dot_product_flash_attention",
                              "_scaled_dot_product_efficient_attention", "_flash_attention_forward",
                              "_efficient_attention_forward", "upsample_bilinear2d", "_scaled_mm"});
  // The registry's tags: pointwise ops (PyTorch's pointwise_ops() adds every packet with an
  // overload tagged pointwise), random and compute-intensive ops.
  for (const OpDef* op : aten_ops().all()) {
    if (op->has_tag(kInplace)) continue;
    if (op->has_tag(kPointwise)) c.recomputable.insert(op->schema.name);
    if (op->has_tag(kRandom) || op->has_tag(kNondeterministicSeeded))
      c.random.insert(op->schema.name);
    if (op->has_tag(kComputeIntensive)) c.compute_intensive.insert(op->schema.name);
  }
  // A random op is never recomputable, whatever its tags say: it would draw new numbers.
  for (const std::string& r : c.random) c.recomputable.erase(r);
  return c;
}

}  // namespace

const OpClasses& OpClasses::defaults() {
  static const OpClasses c = make_defaults();
  return c;
}

std::string_view OpClasses::packet(const Node& n) {
  switch (n.kind()) {
    case NodeKind::Call: return n.op()->schema.name;
    case NodeKind::GetItem: return "getitem";
    case NodeKind::Placeholder: return "placeholder";
    case NodeKind::Output: return "output";
  }
  return "";
}

bool OpClasses::in(const std::unordered_set<std::string>& set, const Node& n) const {
  return n.kind() == NodeKind::Call && set.count(n.op()->schema.name) > 0;
}

namespace {

// An op the registry's provider gave (not declared), which the lists cannot name.
bool provided(const Node& n) { return n.kind() == NodeKind::Call && n.op()->provided; }

}  // namespace

bool OpClasses::is_recomputable(const Node& n) const {
  if (n.kind() == NodeKind::GetItem || in(recomputable, n)) return true;
  return provided(n) && n.op()->has_tag(kPointwise) && !is_random(n);
}
bool OpClasses::is_pointwise(const Node& n) const {
  return n.kind() == NodeKind::Call && n.op()->has_tag(kPointwise) && !n.op()->has_tag(kInplace) &&
         !is_random(n);
}
bool OpClasses::is_fusible(const Node& n) const { return is_recomputable(n) || is_random(n); }
bool OpClasses::is_compute_intensive(const Node& n) const { return in(compute_intensive, n); }
bool OpClasses::is_random(const Node& n) const {
  if (in(random, n)) return true;
  return provided(n) && (n.op()->has_tag(kRandom) || n.op()->has_tag(kNondeterministicSeeded));
}
bool OpClasses::is_normalization(const Node& n) const { return in(normalization, n); }
bool OpClasses::is_collective(const Node& n) const {
  return n.kind() == NodeKind::Call && n.op()->has_tag(kCollective);
}
bool OpClasses::is_regather(const Node& n) {
  if (n.kind() != NodeKind::Call || n.args().empty() || !n.arg(0).is_node()) return false;
  const Node& in = *n.arg(0).node;
  if (n.op()->name == "_c10d_functional::wait_tensor") return is_regather(in);
  return n.op()->name == "_c10d_functional::all_gather_into_tensor" &&
         in.kind() == NodeKind::Placeholder;
}
bool OpClasses::is_unknown(const Node& n) const {
  return provided(n) && !in(recomputable, n) && !in(compute_intensive, n) && !is_view(n) &&
         !n.op()->has_tag(kPointwise) && !is_random(n);
}
bool OpClasses::is_view(const Node& n) const {
  return in(view, n) || (provided(n) && n.op()->has_tag(kView) && !n.op()->has_tag(kInplace));
}

}  // namespace aotgrad

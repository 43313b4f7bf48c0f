// aotgrad: the partitioner's op classes, read from the ops' tags (PyTorch's get_default_op_list).
#include "aotgrad/transforms/op_classes.h"

#include "aotgrad/ops/known_ops.h"

namespace aotgrad {
namespace {

bool call_tagged(const Node& n, uint32_t tags) {
  return n.kind() == NodeKind::Call && n.op()->has_tag(tags);
}

// An op the registry's provider gave (not declared): its tags are the provider's.
bool provided(const Node& n) { return n.kind() == NodeKind::Call && n.op()->provided; }

}  // namespace

const OpClasses& OpClasses::defaults() {
  static const OpClasses c;
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

bool OpClasses::is_recomputable(const Node& n) const {
  if (n.kind() == NodeKind::GetItem) return true;
  if (n.kind() != NodeKind::Call || is_random(n)) return false;
  const OpDef& op = *n.op();
  return op.has_tag(kRecomputable | kViewOp) || (op.has_tag(kPointwise) && !op.has_tag(kInplace));
}
bool OpClasses::is_pointwise(const Node& n) const {
  return call_tagged(n, kPointwise) && !n.op()->has_tag(kInplace) && !is_random(n);
}
bool OpClasses::is_fusible(const Node& n) const { return is_recomputable(n) || is_random(n); }
bool OpClasses::is_compute_intensive(const Node& n) const {
  return call_tagged(n, kComputeIntensive);
}
bool OpClasses::is_random(const Node& n) const {
  return call_tagged(n, kRandom | kNondeterministicSeeded);
}
bool OpClasses::is_normalization(const Node& n) const { return call_tagged(n, kNormalization); }
bool OpClasses::is_collective(const Node& n) const { return call_tagged(n, kCollective); }
bool OpClasses::is_regather(const Node& n) {
  if (n.kind() != NodeKind::Call || n.args().empty() || !n.arg(0).is_node()) return false;
  const Node& in = *n.arg(0).node;
  if (ops::is_call(&n, ops::wait_tensor())) return is_regather(in);
  return ops::is_call(&n, ops::all_gather_into_tensor()) && in.kind() == NodeKind::Placeholder;
}
bool OpClasses::is_unknown(const Node& n) const {
  return provided(n) && !is_recomputable(n) && !is_compute_intensive(n) && !is_view(n) &&
         !n.op()->has_tag(kPointwise) && !is_random(n);
}
bool OpClasses::is_view(const Node& n) const {
  return call_tagged(n, kViewOp) ||
         (provided(n) && n.op()->has_tag(kView) && !n.op()->has_tag(kInplace));
}

}  // namespace aotgrad

// aotgrad: convolution_backward's grad_input and weight gradients as two calls.
#include "aotgrad/transforms/partition/split_weight_grads.h"

#include <string>
#include <utility>
#include <vector>

#include "aotgrad/ops/known_ops.h"

namespace aotgrad {
namespace {

constexpr size_t kOutputMask = 10;  // convolution_backward's bool[3] output_mask

// The output_mask of a convolution_backward call; empty if it is not a literal list of three.
std::vector<bool> output_mask(const Node& n) {
  if (n.args().size() <= kOutputMask) return {};
  const Arg& a = n.args()[kOutputMask];
  if (a.kind != Arg::Kind::List || a.list.size() != 3) return {};
  std::vector<bool> mask;
  for (const Arg& e : a.list) {
    if (e.kind != Arg::Kind::Bool && e.kind != Arg::Kind::Int) return {};
    mask.push_back(e.i != 0);
  }
  return mask;
}

Arg with_mask(const Arg& list, bool input, bool weight, bool bias) {
  Arg a = list;
  a.list[0].i = input;
  a.list[1].i = weight;
  a.list[2].i = bias;
  return a;
}

// The getitems of convolution_backward call `n` that read its weight or bias gradient, when `n`
// is split: it computes grad_input and a weight or bias gradient, every user is a getitem (the
// interpreter's tuples), and both halves are read. Empty otherwise.
std::vector<Node*> weight_getitems(const Node& n) {
  if (!ops::is_call_of_packet(&n, ops::convolution_backward())) return {};
  std::vector<bool> mask = output_mask(n);
  if (mask.empty() || !mask[0] || !(mask[1] || mask[2])) return {};
  if (n.meta().kind != ValueMeta::Kind::Tuple || n.meta().elems.size() != 3) return {};
  std::vector<Node*> items;
  bool input_read = false;
  for (Node* u : n.users()) {
    if (u->kind() != NodeKind::GetItem) return {};
    if (u->getitem_index() >= 1) items.push_back(u);
    input_read = input_read || u->getitem_index() == 0;
  }
  return input_read ? items : std::vector<Node*>{};
}

}  // namespace

bool has_weight_gradients_to_split(const Graph& g) {
  for (const Node* n : g.nodes())
    if (!weight_getitems(*n).empty()) return true;
  return false;
}

int split_weight_gradients(Graph& g) {
  std::vector<std::pair<Node*, std::vector<Node*>>> calls;
  for (Node* n : g.nodes())
    if (std::vector<Node*> items = weight_getitems(*n); !items.empty())
      calls.push_back({n, std::move(items)});
  for (auto& [c, weight_items] : calls) {
    std::vector<bool> mask = output_mask(*c);
    std::vector<Arg> args = c->args();
    args[kOutputMask] = with_mask(args[kOutputMask], false, mask[1], mask[2]);
    ValueMeta meta = c->meta();
    meta.elems[0] = ValueMeta::none();
    Node* saved_point = g.insertion_point();
    g.set_insertion_point(c->next());
    Node* w = g.add_call_raw(*c->op(), std::move(args), c->given_mask(), std::move(meta),
                             g.unique_name("convolution_backward"));
    g.set_insertion_point(saved_point);
    w->info() = c->info();
    w->info().loc = {};
    for (Node* item : weight_items) item->set_arg(0, Arg(w));
    // `w` stands right after `c`, so before every getitem of `c`.
    c->set_arg(kOutputMask, with_mask(c->args()[kOutputMask], true, false, false));
    c->mutable_meta().elems[1] = ValueMeta::none();
    c->mutable_meta().elems[2] = ValueMeta::none();
  }
  return static_cast<int>(calls.size());
}

}  // namespace aotgrad

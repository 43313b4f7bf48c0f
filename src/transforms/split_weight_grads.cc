// aotgrad: convolution_backward's grad_input and weight gradients as two calls.
#include "aotgrad/transforms/split_weight_grads.h"

#include <string>
#include <utility>
#include <vector>

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

}  // namespace

int split_weight_gradients(Graph& g) {
  std::vector<Node*> calls;
  for (Node* n : g.nodes())
    if (n->kind() == NodeKind::Call && n->op()->schema.name == "aten::convolution_backward")
      calls.push_back(n);
  int split = 0;
  for (Node* c : calls) {
    std::vector<bool> mask = output_mask(*c);
    if (mask.empty() || !mask[0] || !(mask[1] || mask[2])) continue;
    if (c->meta().kind != ValueMeta::Kind::Tuple || c->meta().elems.size() != 3) continue;
    // Every user a getitem (the interpreter's tuples), at least one of a weight or bias gradient.
    std::vector<Node*> weight_items;
    bool only_getitems = true, input_read = false;
    for (Node* u : c->users()) {
      only_getitems = only_getitems && u->kind() == NodeKind::GetItem;
      if (u->kind() != NodeKind::GetItem) continue;
      if (u->getitem_index() >= 1) weight_items.push_back(u);
      input_read = input_read || u->getitem_index() == 0;
    }
    if (!only_getitems || weight_items.empty() || !input_read) continue;

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
    ++split;
  }
  return split;
}

}  // namespace aotgrad

// aotgrad: functionalize_rng_ops -- random ops the backward recomputes replay the forward's
// generator state.
#include "aotgrad/transforms/partition/rng_functionalize.h"

#include <unordered_map>
#include <unordered_set>

#include "../passes/arg_remap.h"
#include "aotgrad/ir/error.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

bool on_cuda(const ValueMeta& m) {
  if (m.is_tensor()) return m.tensor.device.type == DeviceType::CUDA;
  for (const ValueMeta& e : m.elems)
    if (on_cuda(e)) return true;
  return false;
}

void check_replayable(const Node& n) {
  if (!n.op()->written_args(n.args()).empty())
    throw Error(n.describe() +
                    ": a random op that writes its arguments cannot be recomputed with a saved RNG "
                    "state (functionalize the graph first)",
                n.info().loc);
  bool cuda = on_cuda(n.meta());
  for (const Arg& a : n.args())
    a.for_each_node([&](Node* m) { cuda = cuda || on_cuda(m->meta()); });
  if (cuda)
    throw Error(n.describe() +
                    ": only the CPU generator's state can be saved for recomputation; this random "
                    "op runs on CUDA",
                n.info().loc);
}

// The wrapped call's arguments after `leading`: the op reference, then the call's own arguments;
// and the given mask to match.
std::pair<std::vector<Arg>, uint64_t> wrapped_args(const Node& n, std::vector<Arg> leading,
                                                   const std::vector<Arg>& args) {
  size_t shift = leading.size() + 1;
  uint64_t given = (1ull << shift) - 1;
  leading.push_back(Arg::of_op(*n.op()));
  leading.insert(leading.end(), args.begin(), args.end());
  return {std::move(leading), given | (n.given_mask() << shift)};
}

}  // namespace

std::vector<RngStateSave> functionalize_rng_ops(Partition& p, const OpClasses& ops) {
  Graph& fw = *p.fw;
  const Graph& bw = *p.bw;
  // Step 1: the random calls both graphs compute (same name, same op).
  std::vector<Node*> fw_random;
  for (Node* n : fw.nodes()) {
    if (n->kind() != NodeKind::Call || !ops.is_random(*n)) continue;
    const Node* b = bw.find(n->name());
    if (b && b->kind() == NodeKind::Call && b->op() == n->op()) fw_random.push_back(n);
  }
  std::vector<RngStateSave> out;
  if (fw_random.empty()) return out;
  const OpTable& table = aten_ops();

  // Step 2: the forward runs each through run_and_save_rng_state and returns the state.
  Node* insertion = fw.insertion_point();
  std::vector<Arg> states;
  for (Node* n : fw_random) {
    check_replayable(*n);
    const OpDef& save = table.higher_order(kRunAndSaveRngState, *n->op());
    auto [args, given] = wrapped_args(*n, {}, n->args());
    fw.set_insertion_point(n);
    Node* call = fw.add_call_raw(save, std::move(args), given,
                                 ValueMeta::tuple({ValueMeta::of(cpu_rng_state_meta()), n->meta()}),
                                 fw.unique_name(save.base_name));
    call->info() = n->info();
    Node* state = fw.add_getitem(call, 0);
    Node* result = fw.add_getitem(call, 1);
    fw.replace_all_uses_with(n, result);
    for (std::string& s : p.saved)
      if (s == n->name()) s = result->name();
    RngStateSave r;
    r.name = n->name();
    r.op = n->op()->name;
    r.fw_call = call->name();
    r.fw_state = state->name();
    out.push_back(std::move(r));
    states.push_back(Arg(state));
    fw.erase(n);
  }
  fw.set_insertion_point(insertion);
  // Saved SymInts stay last, as the runtime expects (PyTorch inserts the states before them).
  std::vector<Arg> fw_out = fw.output()->args()[0].list;
  size_t num_sym = 0;
  while (num_sym < p.saved.size()) {
    const Arg& a = fw_out[fw_out.size() - 1 - num_sym];
    if (!a.is_node() || !a.node->meta().is_sym_scalar()) break;
    ++num_sym;
  }
  const size_t num_saved_tensors = p.saved.size() - num_sym;
  fw_out.insert(fw_out.end() - static_cast<std::ptrdiff_t>(num_sym), states.begin(), states.end());
  fw.set_output(Arg::of_tuple(std::move(fw_out)));
  std::vector<std::string> state_names;
  for (const RngStateSave& r : out) state_names.push_back(r.fw_state);
  p.saved.insert(p.saved.begin() + static_cast<std::ptrdiff_t>(num_saved_tensors),
                 state_names.begin(), state_names.end());

  // Step 3: the backward, rebuilt: the states' placeholders after the saved tensors, and each
  // recomputation through run_with_rng_state.
  auto nb = std::make_unique<Graph>();
  nb->signature = bw.signature;
  for (const Node* n : bw.nodes())
    if (n->kind() != NodeKind::Output) nb->claim_name(n->name());
  std::unordered_map<const Node*, Node*> map;
  std::unordered_map<std::string, size_t> rewritten;  // random call name -> index in `out`
  for (size_t k = 0; k < out.size(); ++k) rewritten.emplace(out[k].name, k);
  std::vector<Node*> phs = bw.placeholders();
  AOTGRAD_CHECK(phs.size() >= num_saved_tensors, "functionalize_rng_ops: the backward has ",
                phs.size(), " inputs, fewer than the ", num_saved_tensors, " saved tensors");
  std::vector<Node*> state_phs;
  for (size_t i = 0; i <= phs.size(); ++i) {
    if (i == num_saved_tensors)
      for (RngStateSave& r : out) {
        int64_t k = static_cast<int64_t>(state_phs.size());
        while (nb->has_name("rng_state_output_" + std::to_string(k))) ++k;
        r.bw_state = "rng_state_output_" + std::to_string(k);
        state_phs.push_back(nb->add_placeholder(r.bw_state, ValueMeta::of(cpu_rng_state_meta())));
      }
    if (i < phs.size()) map[phs[i]] = nb->add_placeholder(phs[i]->name(), phs[i]->meta());
  }
  for (const Node* n : bw.nodes()) {
    switch (n->kind()) {
      case NodeKind::Placeholder: break;
      case NodeKind::GetItem:
        map[n] = nb->add_getitem(map.at(n->getitem_input()), n->getitem_index(), n->name());
        break;
      case NodeKind::Call: {
        std::vector<Arg> args;
        args.reserve(n->args().size());
        for (const Arg& a : n->args()) args.push_back(remap(a, map));
        auto it = rewritten.find(n->name());
        Node* c = nullptr;
        if (it != rewritten.end()) {
          RngStateSave& r = out[it->second];
          const OpDef& with = table.higher_order(kRunWithRngState, *n->op());
          auto [hop_args, given] = wrapped_args(*n, {Arg(state_phs[it->second])}, args);
          c = nb->add_call_raw(with, std::move(hop_args), given, n->meta(),
                               nb->unique_name(with.base_name));
          r.bw_call = c->name();
        } else {
          c = nb->add_call_raw(*n->op(), std::move(args), n->given_mask(), n->meta(), n->name());
        }
        c->info() = n->info();
        map[n] = c;
        break;
      }
      case NodeKind::Output: nb->set_output(remap(n->args()[0], map)); break;
    }
  }
  p.bw = std::move(nb);
  return out;
}

}  // namespace aotgrad

// aotgrad: GraphBuilder, an FX graph built into aotgrad's IR node by node (Note [FX graphs cross
// node by node], src/python/module.cc).
#include "aotgrad/python/graph_builder.h"

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/tensor_meta.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/autograd.h"

namespace aotgrad {

GraphBuilder::GraphBuilder(SymbolHints hints)
    : hints_(std::move(hints)), graph_(std::make_unique<Graph>()) {}

Graph& GraphBuilder::graph() const {
  if (!graph_) throw Error("this GraphBuilder's graph is finished: start another");
  return *graph_;
}

Node* GraphBuilder::add(const std::string& name, Node* n) {
  if (!nodes_.emplace(name, n).second) throw Error("two nodes are named '" + name + "'");
  return n;
}

Node* GraphBuilder::node(const std::string& name, const std::string& where) const {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) throw Error(where + ": '" + name + "' names no earlier node");
  return it->second;
}

ValueMeta GraphBuilder::meta(const std::string& name, const std::string& annotation,
                             const std::string& offset) const {
  ScopedSymbolHints scope(&hints_);
  ValueMeta m;
  try {
    m = parse_annotation(annotation);
  } catch (const Error& e) {
    throw Error("node '" + name + "': annotation \"" + annotation + "\": " + e.message());
  }
  if (m.is_tensor() && !offset.empty()) {
    std::string error;
    std::optional<SymInt> o = parse_sym_expr(offset, &error);
    if (!o) throw Error("node '" + name + "': storage offset '" + offset + "': " + error);
    m.tensor.storage_offset = *o;
  }
  return m;
}

Node* GraphBuilder::placeholder(const std::string& name, ValueMeta meta) {
  return add(name, graph().add_placeholder(name, std::move(meta)));
}

Node* GraphBuilder::call(const std::string& name, const OpDef& op, std::vector<Arg> positional,
                         std::vector<std::pair<std::string, Arg>> named,
                         std::optional<ValueMeta> meta) {
  ScopedSymbolHints scope(&hints_);
  Graph& g = graph();
  try {
    auto [bound, given] = bind_arguments(op, std::move(positional), std::move(named));
    ValueMeta m;
    if (meta) {
      m = std::move(*meta);
    } else {
      try {
        m = infer_meta(op, bound);
      } catch (const Error& e) {
        // Note [Recorded sizes]: the getitems' annotations give a dynamic_output_shape op's
        // results.
        if (!op.has_tag(kDynamicOutputShape) || op.schema.returns.size() < 2) throw;
        m = ValueMeta::tuple(std::vector<ValueMeta>(op.schema.returns.size()));
      }
    }
    return add(name, g.add_call_raw(op, std::move(bound), given, std::move(m), name));
  } catch (const Error& e) {
    throw Error("node '" + name + "' (" + op.name + "): " + e.message());
  }
}

Node* GraphBuilder::getitem(const std::string& name, Node* in, int64_t index,
                            std::optional<ValueMeta> meta) {
  Graph& g = graph();
  if (in->meta().kind != ValueMeta::Kind::Tuple || index < 0 ||
      index >= static_cast<int64_t>(in->meta().elems.size()))
    throw Error("node '" + name + "': " + in->describe() + " has no result " +
                std::to_string(index));
  if (meta && in->meta().elems[index].kind == ValueMeta::Kind::None)
    in->mutable_meta().elems[index] = *meta;  // Note [Recorded sizes]
  Node* n = g.add_getitem(in, index, name);
  if (meta && !n->meta().same_as(*meta)) n->mutable_meta() = std::move(*meta);  // verify says so
  return add(name, n);
}

void GraphBuilder::recompute(const std::string& name, const std::string& policy) {
  graph();
  auto it = nodes_.find(name);
  if (it == nodes_.end() || it->second->kind() != NodeKind::Call)
    throw Error("a recompute policy on '" + name + "', which is not an earlier call");
  std::optional<RecomputePolicy> p = parse_recompute_policy(policy);
  if (!p)
    throw Error("node '" + name + "': unknown recompute policy '" + policy +
                "'; expected MUST_SAVE, PREFER_SAVE, MUST_RECOMPUTE or PREFER_RECOMPUTE");
  it->second->info().recompute = *p;
}

void GraphBuilder::output(Arg value) { graph().set_output(std::move(value)); }

std::shared_ptr<Graph> GraphBuilder::finish(bool joint) {
  if (!graph().output()) throw Error("the graph has no output");
  graph_->signature = joint ? Signature::Joint : Signature::Plain;
  ScopedSymbolHints scope(&hints_);
  verify(*graph_);
  return std::shared_ptr<Graph>(std::move(graph_));
}

}  // namespace aotgrad

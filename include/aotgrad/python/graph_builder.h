// aotgrad: an FX graph built into aotgrad's IR node by node (Note [FX graphs cross node by node],
// src/python/module.cc): what aotgrad._C.GraphBuilder and the C++ walk of an FX graph
// (src/python/from_fx.cc) share.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"
#include "aotgrad/ir/symint.h"

namespace aotgrad {

class GraphBuilder {
 public:
  explicit GraphBuilder(SymbolHints hints);

  /// The metadata of a fake value from its annotation ("f32[4, s0][s0, 1]cpu") and, for a tensor,
  /// its storage offset ("" for none), which no annotation prints; an Error names the node.
  ValueMeta meta(const std::string& name, const std::string& annotation,
                 const std::string& offset) const;

  Node* placeholder(const std::string& name, ValueMeta meta);
  /// A call of `op`; its metadata is `meta` where the node has a fake value, else inferred (a
  /// tuple's). `where` names the op in errors ("aten::add.Tensor").
  Node* call(const std::string& name, const OpDef& op, std::vector<Arg> positional,
             std::vector<std::pair<std::string, Arg>> named, std::optional<ValueMeta> meta);
  Node* getitem(const std::string& name, Node* input, int64_t index, std::optional<ValueMeta> meta);
  /// A selective checkpoint policy on call `name` (MUST_SAVE, PREFER_SAVE, MUST_RECOMPUTE or
  /// PREFER_RECOMPUTE), which the min-cut honours.
  void recompute(const std::string& name, const std::string& policy);
  void output(Arg value);
  /// The graph, verified (aotgrad's inferred metadata against the fake values'); the builder is
  /// finished, and every later call is an Error.
  std::shared_ptr<Graph> finish(bool joint);

  /// The node named `name`, or an Error saying that `where` names no earlier node.
  Node* node(const std::string& name, const std::string& where) const;
  const SymbolHints& hints() const { return hints_; }

 private:
  Graph& graph() const;
  Node* add(const std::string& name, Node* n);

  SymbolHints hints_;
  std::unique_ptr<Graph> graph_;
  std::unordered_map<std::string, Node*> nodes_;
};

}  // namespace aotgrad

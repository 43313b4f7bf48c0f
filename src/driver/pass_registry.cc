// aotgrad: make_pass, and the passes that wrap whole-graph transforms.
#include "aotgrad/driver/pass_registry.h"

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/transforms/functionalize.h"
#include "aotgrad/transforms/partition/split_weight_grads.h"
#include "aotgrad/transforms/passes/constant_fold.h"
#include "aotgrad/transforms/passes/cse.h"
#include "aotgrad/transforms/passes/dce.h"
#include "aotgrad/transforms/passes/decompose.h"
#include "aotgrad/transforms/passes/reinplace.h"
#include "aotgrad/transforms/passes/simplify.h"

namespace aotgrad {

namespace {

// Whether `g` is what this pass makes: no mutation but unused copy_ calls into placeholders after
// every other call (functionalizing those again would add a scatter of the whole input).
bool already_functional(const Graph& g) {
  bool in_tail = false;
  for (const Node* n : g.nodes()) {
    if (n->kind() == NodeKind::Placeholder || n->kind() == NodeKind::Output) continue;
    bool write_back = n->kind() == NodeKind::Call && n->op()->name == kWriteBackOp &&
                      n->arg(0).is_node() && n->arg(0).node->kind() == NodeKind::Placeholder &&
                      n->users().empty();
    if (write_back) {
      in_tail = true;
      continue;
    }
    if (in_tail || has_mutations(*n)) return false;
    for (const Arg& a : n->args())  // a cond branch that mutates its intermediates
      if (a.kind == Arg::Kind::Graph && a.graph && !already_functional(*a.graph)) return false;
    if (n->kind() == NodeKind::Call && is_effectful(*n->op()) && !n->op()->wrapped)
      return false;  // its effect token is not threaded yet
  }
  return true;
}

// functionalize() as a pass: the functional graph replaces the input. Input mutations stay in the
// graph as trailing copy_ calls, so inputs and outputs are the caller's; a metadata mutation of an
// input (t_ on an argument) still adds an output, as FunctionalizeResult::meta says. A graph
// already in that form is left alone. Effectful calls thread an effect token, the graph's first
// input and output (Note [Effect tokens]). changes(): calls with mutations or effects in the input
// graph.
class FunctionalizePass : public Pass {
 public:
  std::string_view name() const override { return "functionalize"; }
  bool run(Graph& g) override {
    changes_ = 0;
    if (already_functional(g)) return false;
    for (const Node* n : g.nodes())
      if (n->kind() == NodeKind::Call &&
          (has_mutations(*n) || (is_effectful(*n->op()) && !n->op()->wrapped)))
        ++changes_;
    FunctionalizeOptions opts;
    opts.keep_input_mutations = true;
    FunctionalizeResult r = functionalize(g, opts);
    PrintOptions p;
    if (print_graph(g, p) == print_graph(*r.graph, p)) return false;
    assign_graph(g, *r.graph);
    return true;
  }
};

// decompose() with a table from a --decomp spec. changes(): calls replaced.
class DecomposePass : public Pass {
 public:
  explicit DecomposePass(std::string spec)
      : name_("decomp:" + spec), table_(parse_decomposition_spec(spec)) {}
  std::string_view name() const override { return name_; }
  bool run(Graph& g) override {
    changes_ = decompose(g, table_);
    return changes_ > 0;
  }

 private:
  std::string name_;
  DecompositionTable table_;
};

// reinplace_plan() as a rewrite, as torch.fx.passes.reinplace does: a call the plan writes into
// its argument 0 by the in-place variant becomes a call of that variant, under the same name,
// read by the same users. The plan's out= choices (pointwise ops written into another argument)
// are left to the runtime, which applies the whole plan itself: no graph op says them. A
// functional graph only. changes(): calls rewritten.
class ReinplacePass : public Pass {
 public:
  std::string_view name() const override { return "reinplace"; }
  bool run(Graph& g) override {
    changes_ = 0;
    std::vector<ReinplaceChoice> plan = reinplace_plan(g);
    std::vector<Node*> nodes;
    for (Node* n : g.nodes()) nodes.push_back(n);
    for (size_t i = 0; i < nodes.size() && i < plan.size(); ++i) {
      if (!plan[i] || !plan[i].inplace) continue;
      g.replace_op(nodes[i], *plan[i].inplace);
      ++changes_;
    }
    return changes_ > 0;
  }
};

// split_weight_gradients() as a pass. changes(): convolution_backward calls split.
class SplitWeightGradsPass : public Pass {
 public:
  std::string_view name() const override { return "split_weight_grads"; }
  bool run(Graph& g) override {
    changes_ = split_weight_gradients(g);
    return changes_ > 0;
  }
};

}  // namespace

std::string known_pass_names() {
  return "functionalize, decomp:<spec>, dce, cse, constant_fold (fold), simplify, reinplace, "
         "split_weight_grads";
}

std::unique_ptr<Pass> make_pass(std::string_view spec) {
  if (spec == "functionalize") return std::make_unique<FunctionalizePass>();
  if (spec.rfind("decomp:", 0) == 0) {
    std::string table(spec.substr(7));
    try {
      return std::make_unique<DecomposePass>(table);
    } catch (const Error& e) {
      throw Error("pass '" + std::string(spec) + "': " + e.message());
    }
  }
  if (spec == "dce") return std::make_unique<DeadCodeElimination>();
  if (spec == "cse") return std::make_unique<CommonSubexpressionElimination>();
  if (spec == "constant_fold" || spec == "fold") return std::make_unique<ConstantFolding>();
  if (spec == "simplify") return std::make_unique<AlgebraicSimplification>();
  if (spec == "reinplace") return std::make_unique<ReinplacePass>();
  if (spec == "split_weight_grads") return std::make_unique<SplitWeightGradsPass>();
  throw Error("unknown pass '" + std::string(spec) + "'; known passes: " + known_pass_names());
}

}  // namespace aotgrad

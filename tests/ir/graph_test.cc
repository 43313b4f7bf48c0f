// aotgrad: tests of Graph bookkeeping -- where placeholders go, erasing, and clone().
#include "aotgrad/ir/graph.h"

#include <gtest/gtest.h>

#include <random>

#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

ValueMeta f32(SymIntVector sizes) {
  return ValueMeta::of(make_tensor_meta(ScalarType::Float32, std::move(sizes)));
}

const OpDef& op(std::string_view name) { return aten_ops().get(name); }

std::vector<std::string> names(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) out.push_back(n->name());
  return out;
}

// The node a placeholder added now must follow: the last of the placeholders the list starts with.
const Node* end_of_leading_placeholders(const Graph& g) {
  const Node* last = nullptr;
  for (const Node* n : g.nodes()) {
    if (n->kind() != NodeKind::Placeholder) break;
    last = n;
  }
  return last;
}

TEST(Graph, PlaceholdersGoAfterTheLeadingPlaceholders) {
  Graph g;
  Node* x = g.add_placeholder("x", f32({4}));
  Node* r = g.add_call(op("aten::relu"), {x});
  g.set_output(Arg::of_tuple({r}));
  g.add_placeholder("y", f32({4}));
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "y", "relu", "output"}));

  // A call put before a placeholder ends the leading run there; erasing it joins the runs again.
  g.set_insertion_point(g.find("y"));
  Node* s = g.add_call(op("aten::sigmoid"), {x});
  g.set_insertion_point(nullptr);
  g.add_placeholder("z", f32({4}));
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "z", "sigmoid", "y", "relu", "output"}));
  g.erase(s);
  g.add_placeholder("w", f32({4}));
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "z", "y", "w", "relu", "output"}));

  // Erasing the last placeholder, then all of them.
  g.erase(g.find("w"));
  g.add_placeholder("v", f32({4}));
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "z", "y", "v", "relu", "output"}));
  for (const char* n : {"v", "y", "z"}) g.erase(g.find(n));
  g.replace_all_uses_with(x, g.add_placeholder("u", f32({4})));
  g.erase(x);
  EXPECT_EQ(names(g), (std::vector<std::string>{"u", "relu", "output"}));
  g.erase(g.output());
  g.erase(r);
  g.erase(g.find("u"));
  EXPECT_EQ(g.size(), 0u);
  g.add_placeholder("t", f32({4}));
  EXPECT_EQ(names(g), (std::vector<std::string>{"t"}));
}

// Random insertions (placeholders, calls at random insertion points, some before placeholders)
// and erasures: every new placeholder lands right after the placeholders the list starts with.
TEST(Graph, ReplaceOpKeepsNameArgumentsAndUsers) {
  Graph g;
  Node* x = g.add_placeholder("x", f32({4}));
  Node* r = g.add_call(op("aten::relu"), {x});
  Node* s = g.add_call(op("aten::sin"), {r});
  g.set_output(Arg::of_tuple({s}));
  g.replace_op(r, op("aten::relu_"));
  EXPECT_EQ(r->op()->name, "aten::relu_");
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "relu", "sin", "output"}));
  EXPECT_EQ(s->args()[0].node, r);
  // An op that binds a different argument list is refused, and the call is left as it was.
  EXPECT_THROW(g.replace_op(r, op("aten::add.Tensor")), Error);
  EXPECT_EQ(r->op()->name, "aten::relu_");
  EXPECT_THROW(g.replace_op(x, op("aten::relu")), Error);
}

TEST(Graph, PlaceholderPositionUnderRandomEdits) {
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    Graph g;
    std::vector<Node*> live;
    int made = 0;
    for (int step = 0; step < 300; ++step) {
      int what = static_cast<int>(rng() % 4);
      if (what == 0 || live.empty()) {
        const Node* after = end_of_leading_placeholders(g);
        Node* p = g.add_placeholder("p" + std::to_string(made++), f32({2}));
        ASSERT_EQ(p->prev(), after) << "step " << step;
        live.push_back(p);
      } else if (what <= 2) {
        Node* in = live[rng() % live.size()];
        Node* at = rng() % 3 == 0 ? nullptr : live[rng() % live.size()];
        // Keep the graph topologically ordered: a call goes after its input.
        bool after_input = false;
        for (const Node* n = in; n; n = n->next())
          if (n == at) after_input = true;
        g.set_insertion_point(after_input && at != in ? at : nullptr);
        live.push_back(g.add_call(op("aten::relu"), {in}));
        g.set_insertion_point(nullptr);
      } else {
        size_t k = rng() % live.size();
        if (!live[k]->users().empty()) continue;
        g.erase(live[k]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      }
    }
  }
}

TEST(Graph, CloneCopiesNodesNamesMetadataAndInfo) {
  Graph g;
  g.signature = Signature::Joint;
  Node* x = g.add_placeholder("primals_1", f32({4, 8}));
  Node* t = g.add_placeholder("tangents_1", f32({2, 8}));
  Node* split = g.add_call(op("aten::split.Tensor"), {x, Arg::of_int(2)});
  Node* a = g.add_getitem(split, 0);
  Node* m = g.add_call(op("aten::mul.Tensor"), {a, t});
  m->info().is_backward = true;
  m->info().recompute = RecomputePolicy::MustSave;
  m->info().origin = "mul_origin";
  g.set_output(Arg::of_list({m, Arg::none(), a}));

  std::unique_ptr<Graph> c = g.clone();
  EXPECT_EQ(print_graph(*c), print_graph(g));
  EXPECT_EQ(c->signature, Signature::Joint);
  ASSERT_EQ(c->size(), g.size());
  const Node* cm = c->find("mul");
  ASSERT_NE(cm, nullptr);
  EXPECT_NE(cm, m);
  EXPECT_EQ(cm->graph(), c.get());
  EXPECT_TRUE(cm->info().is_backward);
  EXPECT_EQ(cm->info().recompute, RecomputePolicy::MustSave);
  EXPECT_EQ(cm->info().origin, "mul_origin");
  EXPECT_EQ(cm->arg(0).node, c->find("getitem"));
  EXPECT_EQ(c->find("getitem")->users().size(), 2u);  // mul and the output
  // The copy's name counters continue where the original's are.
  EXPECT_EQ(c->unique_name("mul"), g.unique_name("mul"));
  // New placeholders of the copy go after its own placeholders.
  c->add_placeholder("tangents_2", f32({2}));
  EXPECT_EQ(c->placeholders().size(), 3u);
  EXPECT_EQ(c->placeholders().back()->name(), "tangents_2");
}

TEST(Graph, ReorderRelinksTheSameNodesAndRefusesABadOrder) {
  Graph g;
  Node* x = g.add_placeholder("x", f32({4}));
  Node* y = g.add_placeholder("y", f32({4}));
  Node* a = g.add_call(op("aten::relu"), {x});
  Node* b = g.add_call(op("aten::neg"), {y});
  Node* c = g.add_call(op("aten::mul.Tensor"), {a, b});
  g.set_output(Arg::of_tuple({c}));
  const std::string before = print_graph(g);

  g.reorder({b, a, c});
  EXPECT_EQ(names(g), (std::vector<std::string>{"x", "y", "neg", "relu", "mul", "output"}));
  EXPECT_EQ(g.find("relu"), a);  // the same nodes, relinked
  EXPECT_EQ(g.size(), 6u);
  // Walking backwards agrees, and a node added now still goes before the output.
  std::vector<std::string> back;
  for (const Node* n = g.output(); n; n = n->prev()) back.push_back(n->name());
  EXPECT_EQ(back, (std::vector<std::string>{"output", "mul", "relu", "neg", "y", "x"}));
  Node* d = g.add_call(op("aten::relu"), {c});
  EXPECT_EQ(d->next(), g.output());
  g.erase(d);
  g.reorder({a, b, c});
  EXPECT_EQ(print_graph(g), before);

  // A node before its argument, a node twice or missing, a placeholder: errors that name it, and
  // the graph as it was.
  auto refused = [&](const std::vector<const Node*>& body, const std::string& says) {
    try {
      g.reorder(body);
      ADD_FAILURE() << "accepted an order with " << says;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_EQ(print_graph(g), before);
  };
  refused({c, a, b}, "before its argument 'relu'");
  refused({a, a, c}, "given twice");
  refused({a, c}, "2 nodes given for the 3");
  refused({x, b, c}, "is not a call or getitem");
}

}  // namespace
}  // namespace aotgrad

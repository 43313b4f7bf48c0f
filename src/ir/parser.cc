// aotgrad: parses PyTorch's readable GraphModule code (the text form) into a Graph.
#include "aotgrad/ir/parser.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <optional>
#include <unordered_map>
#include <vector>

#include "aotgrad/support/quote.h"
#include "text_lexer.h"
#include "text_tables.h"

namespace aotgrad {
namespace {

using text::describe_token;
using text::Token;
using text::TokKind;

// Lists and tuples nest at most this deep (Python's own parser stops near 200).
constexpr int kMaxDepth = 100;

std::string q(std::string_view s) { return quote_bytes(s); }

// A forward() parameter without an annotation: one of the pytree arguments of the joint form.
struct PytreeParam {
  std::string_view name;
  SourceLoc loc;
};

// An op as the parser uses it: its definition, and its schema's defaults converted once.
struct OpEntry {
  const OpDef* op = nullptr;
  size_t n_positional = 0;
  std::vector<Arg> defaults;  // per schema argument
  std::vector<bool> has_default;
  bool is_view = false;  // the result aliases an argument: annotations lack its storage offset
};

// A `name: "annotation";` declaration of the joint header.
struct Declaration {
  ValueMeta meta;
  SourceLoc loc;
};

// The subgraphs a block of text defines in its nested classes, by class name.
struct Subgraph {
  std::shared_ptr<const Graph> graph;
  SourceLoc loc;  // of the class line
  bool used = false;
};
using Subgraphs = std::unordered_map<std::string, Subgraph>;

class Parser {
 public:
  // Parses the block `src[begin..]`, which starts at line `line`, with its nested classes'
  // subgraphs `subgraphs` (marked used as attributes reference them).
  Parser(std::string_view src, size_t begin, int line, const OpTable& ops, Subgraphs& subgraphs)
      : lex_(src, begin, line),
        ops_(ops),
        g_(std::make_unique<Graph>()),
        values_((src.size() - begin) / 128),
        subgraphs_(subgraphs) {}

  std::unique_ptr<Graph> run() {
    try {
      parse_all();
    } catch (const Error&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw Error("out of memory while parsing the graph", here());
    } catch (const std::exception& e) {  // a library throw we did not foresee: still a clean Error
      throw Error(std::string("internal error while parsing: ") + e.what(), here());
    }
    return std::move(g_);
  }

 private:
  // --- tokens of the current logical line ---

  void next_line() {
    lex_.next_line(toks_);
    pos_ = 0;
  }
  const Token& peek(size_t k = 0) const {
    size_t i = pos_ + k;
    return i < toks_.size() ? toks_[i] : toks_.back();
  }
  SourceLoc here() const { return toks_.empty() ? SourceLoc{} : peek().loc; }
  const Token& take() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }

  [[noreturn]] static void fail(SourceLoc loc, const std::string& message) {
    throw Error(message, loc);
  }
  [[noreturn]] static void expected(const Token& t, std::string_view what) {
    if (t.kind == TokKind::End)
      fail(t.loc, "unexpected end of input (expected " + std::string(what) + ")");
    fail(t.loc, "expected " + std::string(what) + ", got " + describe_token(t));
  }
  const Token& expect_punct(char c, std::string_view what) {
    if (!peek().is(c)) expected(peek(), what);
    return take();
  }
  const Token& expect_name(std::string_view what) {
    if (peek().kind != TokKind::Name) expected(peek(), what);
    return take();
  }
  void expect_keyword(std::string_view word, std::string_view what) {
    if (!peek().is_name(word)) expected(peek(), what);
    take();
  }

  // --- top level ---

  void parse_all() {
    next_line();
    if (peek().is_name("class")) {
      // `class <name>(torch.nn.Module):` -- any class name (PyTorch prints `<lambda>` too).
      while (!peek().at_line_end()) take();
      if (toks_.size() < 2 || !toks_[toks_.size() - 2].is(':'))
        expected(peek(), "':' at the end of the class line");
      next_line();
    }
    parse_def();
    while (true) {
      next_line();
      if (peek().kind == TokKind::End) break;
      parse_line();
    }
    if (!pytree_params_.empty() && !flattened_)
      fail(pytree_params_[0].loc,
           "placeholder '" + std::string(pytree_params_[0].name) + "' has no type annotation");
    if (!returned_) fail(peek().loc, "the graph has no return statement");
  }

  // def forward(self, x: "f32[4]", ...):   or   def forward(self, primals, tangents):
  void parse_def() {
    if (!peek().is_name("def")) expected(peek(), "'def forward(self, ...):'");
    take();
    expect_keyword("forward", "'forward' after 'def'");
    expect_punct('(', "'(' after 'def forward'");
    expect_keyword("self", "'self' as the first parameter of forward");
    struct Param {
      const Token* name;
      std::optional<Token> ann;
    };
    std::vector<Param> params;
    while (peek().is(',')) {
      take();
      if (peek().is(')')) break;
      Param p{&expect_name("a parameter name"), std::nullopt};
      if (peek().is(':')) {
        take();
        p.ann = annotation_token(/*stop_at_comma=*/true);
      }
      params.push_back(p);
    }
    expect_punct(')', "')' after the parameters of forward");
    if (peek().is('-') && peek(1).is('>')) {  // a return annotation: skipped
      while (!peek().at_line_end() && !(peek().is(':') && peek(1).at_line_end())) take();
    }
    expect_punct(':', "':' after 'def forward(...)'");
    if (!peek().at_line_end()) expected(peek(), "the end of the line after 'def forward(...):'");
    bool any_annotated = false;
    for (auto& p : params) any_annotated = any_annotated || p.ann.has_value();
    for (auto& p : params) {
      if (p.ann) {
        define_placeholder(*p.name, annotation_meta(*p.ann));
      } else if (any_annotated) {
        fail(p.name->loc, "placeholder '" + std::string(p.name->text) + "' has no type annotation");
      } else {
        pytree_params_.push_back({p.name->text, p.name->loc});
      }
    }
  }

  void parse_line() {
    while (true) {
      parse_statement();
      if (peek().is(';')) {
        take();
        if (peek().at_line_end()) return;
        continue;
      }
      if (!peek().at_line_end()) expected(peek(), "';' or the end of the line");
      return;
    }
  }

  void parse_statement() {
    const Token& t = peek();
    if (t.kind != TokKind::Name) expected(t, "a statement");
    // `a = b = None`: FX's release statements, accepted and ignored (the printer re-creates them).
    if (peek(1).is('=')) {
      size_t k = 0;
      while (peek(k).kind == TokKind::Name && peek(k + 1).is('=')) k += 2;
      if (k >= 2 && peek(k).is_name("None") && (peek(k + 1).is(';') || peek(k + 1).at_line_end())) {
        for (size_t i = 0; i <= k; ++i) take();
        return;
      }
    }
    if (returned_) fail(t.loc, "unexpected statement after the return statement");
    if (!pytree_params_.empty() && !flattened_) {
      if (peek(1).is(':')) {
        parse_declaration();
        return;
      }
      if (peek(1).is(',') || (peek(1).is('=') && peek(2).is_name("fx_pytree"))) {
        parse_flatten();
        return;
      }
      fail(pytree_params_[0].loc,
           "placeholder '" + std::string(pytree_params_[0].name) + "' has no type annotation");
    }
    if (t.is_name("return")) {
      parse_return();
      return;
    }
    if (t.is_name("def") || t.is_name("class"))
      fail(t.loc, "unexpected '" + std::string(t.text) + "': a graph has one forward function");
    if (peek(1).is(':') || peek(1).is('=')) {
      parse_assignment();
      return;
    }
    expected(peek(1), "'=' after " + q(t.text));
  }

  // --- the joint header ---

  // primals_1: "f32[4, 8][8, 1]cpu";
  void parse_declaration() {
    const Token& name = take();
    take();  // ':'
    Token ann = annotation_token(/*stop_at_comma=*/false);
    if (!peek().is(';') && !peek().at_line_end())
      fail(pytree_params_[0].loc,
           "placeholder '" + std::string(pytree_params_[0].name) + "' has no type annotation");
    if (decls_.count(name.text))
      fail(name.loc, "'" + std::string(name.text) + "' is annotated twice");
    decls_.emplace(name.text, Declaration{annotation_meta(ann), name.loc});
  }

  // primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents],
  // self._in_spec)
  void parse_flatten() {
    std::vector<const Token*> names;
    while (peek().kind == TokKind::Name && !peek().is_name("fx_pytree")) {
      names.push_back(&take());
      if (!peek().is(',')) break;
      take();
    }
    expect_punct('=', "'=' before fx_pytree.tree_flatten_spec");
    expect_keyword("fx_pytree", "'fx_pytree.tree_flatten_spec'");
    expect_punct('.', "'.' after 'fx_pytree'");
    expect_keyword("tree_flatten_spec", "'tree_flatten_spec'");
    expect_punct('(', "'(' after 'fx_pytree.tree_flatten_spec'");
    expect_punct('[', "'[' before the forward parameters");
    while (!peek().is(']')) {
      const Token& p = expect_name("a forward parameter name");
      bool known = false;
      for (auto& pp : pytree_params_) known = known || pp.name == p.text;
      if (!known) fail(p.loc, q(p.text) + " is not a parameter of forward");
      if (!peek().is(',')) break;
      take();
    }
    expect_punct(']', "']' after the forward parameters");
    expect_punct(',', "', self._in_spec' after the forward parameters");
    expect_keyword("self", "'self._in_spec'");
    expect_punct('.', "'self._in_spec'");
    expect_keyword("_in_spec", "'self._in_spec'");
    expect_punct(')', "')' after 'self._in_spec'");
    for (const Token* n : names) {
      auto it = decls_.find(n->text);
      if (it == decls_.end())
        fail(n->loc, "placeholder '" + std::string(n->text) + "' has no type annotation");
      define_placeholder(*n, std::move(it->second.meta));
      decls_.erase(it);
    }
    if (!decls_.empty()) {
      auto first = decls_.begin();
      for (auto it = decls_.begin(); it != decls_.end(); ++it)
        if (it->second.loc.line < first->second.loc.line ||
            (it->second.loc.line == first->second.loc.line &&
             it->second.loc.col < first->second.loc.col))
          first = it;
      fail(first->second.loc, "'" + std::string(first->first) +
                                  "' is annotated but not unpacked by fx_pytree.tree_flatten_spec");
    }
    flattened_ = true;
    g_->signature = Signature::Joint;
  }

  // --- statements ---

  // name[: "ann"] = torch.ops.aten.op.overload(args) | x[i] | operator.getitem(x, i)
  void parse_assignment() {
    const Token& name = take();
    std::optional<ValueMeta> ann;
    if (peek().is(':')) {
      take();
      ann = annotation_meta(annotation_token(/*stop_at_comma=*/false));
    }
    if (!peek().is('=')) expected(peek(), "'=' after " + q(name.text));
    take();
    check_new_name(name);
    Node* node = nullptr;
    if (peek().kind == TokKind::Name && peek(1).is('[')) {
      const Token& input = take();
      Node* in = lookup(input);
      take();  // '['
      const Token& index_tok = peek();
      int64_t index = parse_index();
      expect_punct(']', "']' after the index");
      node = add_getitem(in, index, name, input, index_tok);
      if (records_result(*in, index)) {
        if (!ann)
          fail(name.loc, "'" + std::string(name.text) + "' unpacks a result of " + in->describe() +
                             ", whose sizes depend on its inputs' values (dynamic_output_shape): "
                             "it needs a type annotation");
        in->mutable_meta().elems[index] = *ann;
      }
      if (ann) keep_annotation(node, std::move(*ann));
    } else if (peek().kind == TokKind::Name && peek().text == "self" && peek(1).is('.')) {
      // A tensor constant of the graph module (get_attr): a lifted input named after it.
      take();
      take();  // '.'
      const Token& attr = expect_name("an attribute name after 'self.'");
      if (!ann) {  // a subgraph: the graph module attribute of a nested class
        define_graph_attribute(name, attr);
        return;
      }
      if (attr.text != name.text)
        fail(attr.loc, "'" + std::string(name.text) + " = self." + std::string(attr.text) +
                           "': a tensor constant must be assigned to its own name");
      if (!ann)
        fail(name.loc, "tensor constant '" + std::string(name.text) + "' has no type annotation");
      if (!ann->is_tensor())
        fail(name.loc, "tensor constant '" + std::string(name.text) + "' is annotated " +
                           ann->describe() + ", not as a tensor");
      node = g_->add_placeholder(std::string(name.text), std::move(*ann));
      node->info().lifted_constant = true;
    } else if (is_infix_start()) {
      node = parse_infix(name, ann ? &*ann : nullptr);
    } else {
      const Token& callee_start = peek();
      std::vector<std::string_view>& segments = segments_;
      segments.clear();
      segments.push_back(expect_name("an op such as torch.ops.aten.add.Tensor").text);
      const Token* last = &callee_start;
      while (peek().is('.')) {
        take();
        last = &expect_name("a name after '.'");
        segments.push_back(last->text);
      }
      if (segments.size() == 2 && segments[0] == "operator" && segments[1] == "getitem") {
        expect_punct('(', "'(' after operator.getitem");
        const Token& input = expect_name("a value name");
        Node* in = lookup(input);
        expect_punct(',', "',' after the getitem input");
        const Token& index_tok = peek();
        int64_t index = parse_index();
        if (peek().is(',')) take();
        expect_punct(')', "')' after arguments");
        node = add_getitem(in, index, name, input, index_tok);
        if (ann) keep_annotation(node, std::move(*ann));
      } else {
        const char* b = callee_start.text.data();
        std::string_view span(b, last->text.data() + last->text.size() - b);
        if (const HigherOrderOpDef* hop = higher_order_family(span, segments, callee_start)) {
          node = parse_higher_order_call(*hop, name, callee_start, ann ? &*ann : nullptr);
        } else {
          const OpEntry& op = resolve_op(span, segments, callee_start);
          node = parse_call(op, name, callee_start, ann ? &*ann : nullptr);
        }
      }
    }
    node->info().loc = name.loc;
    read_recompute_comment(node);
    values_.insert(name.text, node);
  }

  // `true_graph_0 = self.true_graph_0`: the subgraph of the nested class `true_graph_0`.
  void define_graph_attribute(const Token& name, const Token& attr) {
    auto it = subgraphs_.find(std::string(attr.text));
    if (it == subgraphs_.end())
      fail(attr.loc, "unknown subgraph '" + std::string(attr.text) + "' (no nested class " +
                         std::string(attr.text) +
                         "(torch.nn.Module) defines it), or a tensor constant without a type "
                         "annotation");
    if (attr.text != name.text)
      fail(attr.loc, "'" + std::string(name.text) + " = self." + std::string(attr.text) +
                         "': a subgraph must be assigned to its own name");
    it->second.used = true;
    graph_values_.insert(name.text, &it->second);
  }

  // `# recompute=MUST_RECOMPUTE` after a statement: the node's checkpoint policy (what the
  // printer writes). Other comments are ignored.
  void read_recompute_comment(Node* node) {
    std::string_view c = lex_.line_comment();
    while (!c.empty() && (c.front() == ' ' || c.front() == '\t')) c.remove_prefix(1);
    while (!c.empty() && (c.back() == ' ' || c.back() == '\t' || c.back() == '\r'))
      c.remove_suffix(1);
    constexpr std::string_view kKey = "recompute=";
    if (c.substr(0, kKey.size()) != kKey) return;
    std::string_view value = c.substr(kKey.size());
    std::optional<RecomputePolicy> p = parse_recompute_policy(value);
    if (!p)
      fail(node->info().loc, "unknown recompute policy " + q(value) + " of " + q(node->name()) +
                                 "; expected MUST_SAVE, PREFER_SAVE, MUST_RECOMPUTE or "
                                 "PREFER_RECOMPUTE");
    if (node->kind() == NodeKind::Placeholder)
      fail(node->info().loc, "a recompute policy on " + q(node->name()) +
                                 ", which is not an op call: only calls are recomputed");
    node->info().recompute = *p;
  }

  // SymInt arithmetic as FX prints operator.mul & co.: `mul = sym_size_int * 2`, `2 * s`,
  // `floordiv = a // 4`, `neg = -a`.
  bool is_infix_start() const {
    const Token& t = peek();
    if (t.kind == TokKind::Int || t.is('-')) return true;
    if (t.kind != TokKind::Name || peek(1).kind != TokKind::Punct) return false;
    const Token& o = peek(1);
    return o.is('*') || o.is('+') || o.is('-') || o.is('%') || (o.is('/') && peek(2).is('/'));
  }

  Node* parse_infix(const Token& name, ValueMeta* ann) {
    const Token& start = peek();
    std::vector<Arg> bound;
    const char* op_name = nullptr;
    if (start.is('-') && peek(1).kind == TokKind::Name) {
      take();
      op_name = "operator::neg";
      bound.push_back(parse_value(0));
    } else {
      bound.push_back(parse_value(0));
      const Token& o = peek();
      if (o.is('*'))
        op_name = "operator::mul";
      else if (o.is('+'))
        op_name = "operator::add";
      else if (o.is('-'))
        op_name = "operator::sub";
      else if (o.is('%'))
        op_name = "operator::mod";
      else if (o.is('/') && peek(1).is('/'))
        op_name = "operator::floordiv";
      else
        expected(o, "an op such as torch.ops.aten.add.Tensor or a SymInt operator (* + - // %)");
      take();
      if (o.is('/')) take();
      bound.push_back(parse_value(0));
    }
    const OpDef* op = find_op(op_name, "default", start);
    for (size_t i = 0; i < bound.size(); ++i) {
      std::string err = check_arg_type(op->schema.args[i].type, bound[i]);
      if (!err.empty())
        fail(start.loc, op->name + " operand " + std::to_string(i + 1) + ": " + err);
    }
    ValueMeta meta;
    if (ann) {
      meta = std::move(*ann);
    } else {
      try {
        meta = infer_meta(*op, bound);
      } catch (const Error& err) {
        fail(start.loc, err.message());
      }
    }
    uint64_t given = bound.size() == 1 ? 1u : 3u;
    return g_->add_call_raw(*op, std::move(bound), given, std::move(meta), std::string(name.text));
  }

  // A getitem (or view) node's metadata is known exactly, storage offset included; the annotation
  // (which has no storage offset) replaces it only when it says something else, so that the
  // verifier reports the difference.
  // Whether result `index` of `in` is known only from the getitem's annotation: a
  // dynamic_output_shape op's whose metadata could not be inferred (Note [Recorded sizes]).
  static bool records_result(const Node& in, int64_t index) {
    return in.kind() == NodeKind::Call && in.op()->has_tag(kDynamicOutputShape) &&
           in.meta().kind == ValueMeta::Kind::Tuple &&
           in.meta().elems[index].kind == ValueMeta::Kind::None;
  }

  static void keep_annotation(Node* node, ValueMeta ann) {
    if (!same_printed_meta(node->meta(), ann)) node->mutable_meta() = std::move(ann);
  }

  // Equal in what an annotation shows: dtype, sizes, strides, device (not the storage offset).
  static bool same_printed_meta(const ValueMeta& a, const ValueMeta& b) {
    if (a.kind != ValueMeta::Kind::Tensor || b.kind != ValueMeta::Kind::Tensor) return a.same_as(b);
    const TensorMeta &x = a.tensor, &y = b.tensor;
    return x.dtype == y.dtype && x.device == y.device && x.sizes == y.sizes &&
           x.strides == y.strides;
  }

  Node* add_getitem(Node* in, int64_t index, const Token& name, const Token& input,
                    const Token& index_tok) {
    const ValueMeta& m = in->meta();
    if (m.kind != ValueMeta::Kind::Tuple)
      fail(input.loc,
           "getitem on " + in->describe() + ", which is not a tuple (" + m.describe() + ")");
    if (index < 0 || index >= static_cast<int64_t>(m.elems.size()))
      fail(index_tok.loc, "getitem index " + std::to_string(index) + " is out of range for " +
                              in->describe() + " with " + std::to_string(m.elems.size()) +
                              " results");
    return g_->add_getitem(in, index, std::string(name.text));
  }

  int64_t parse_index() {
    bool neg = false;
    if (peek().is('-')) {
      take();
      neg = true;
    }
    if (peek().kind != TokKind::Int) expected(peek(), "an integer index");
    return parse_int(take(), neg);
  }

  // The arguments of an op call, bound to its schema (as bind_arguments binds them: positional
  // schema arguments given by keyword take their position, defaults fill the rest); the node is
  // added to the graph with the annotated metadata `ann`, or (none given) the inferred one. Each
  // argument is type-checked where it was written, so that errors point at it.
  Node* parse_call(const OpEntry& e, const Token& name, const Token& callee, ValueMeta* ann) {
    expect_punct('(', "'(' after the op name");
    return parse_call_args(e, name, callee, ann, {}, {});
  }

  // torch.ops.higher_order.run_with_rng_state(rng_state, torch.ops.aten.native_dropout.default,
  // x, 0.5, True): the family's leading arguments, the wrapped op, then that op's arguments, bound
  // to the OpDef the family derives for the wrapped op.
  Node* parse_higher_order_call(const HigherOrderOpDef& hop, const Token& name, const Token& callee,
                                ValueMeta* ann) {
    expect_punct('(', "'(' after the op name");
    std::vector<Arg> prefix;
    std::vector<SourceLoc> locs;
    for (const SchemaArg& lead : hop.leading) {
      if (peek().is(')') || peek().at_line_end())
        expected(peek(), "argument '" + lead.name + "' of " + hop.name);
      locs.push_back(peek().loc);
      prefix.push_back(parse_value(0));
      if (prefix.back().kind == Arg::Kind::Op && lead.type.base != BaseType::Any)
        fail(locs.back(), "argument '" + lead.name + "' of " + hop.name +
                              " is missing: it comes before the op, got " +
                              arg_to_string(prefix.back()));
      expect_punct(',', "',' after argument '" + lead.name + "' of " + hop.name);
    }
    const std::string what =
        "the op " + hop.name + " wraps, such as torch.ops.aten.native_dropout.default";
    if (peek().is(')') || peek().at_line_end()) expected(peek(), what);
    SourceLoc ref_loc = peek().loc;
    Arg ref = parse_value(0);
    if (ref.kind != Arg::Kind::Op)
      fail(ref_loc, "expected " + what + ", got " + arg_to_string(ref));
    const OpDef* derived = nullptr;
    try {
      derived = &ops_.higher_order(hop.name, *ref.op);
    } catch (const Error& err) {
      fail(ref_loc, err.message());
    }
    prefix.push_back(std::move(ref));
    locs.push_back(ref_loc);
    if (peek().is(','))
      take();
    else if (!peek().is(')'))
      expected(peek(), "',' or ')' after the wrapped op");
    return parse_call_args(entry(*derived), name, callee, ann, std::move(prefix), locs);
  }

  // The arguments after '(' (the first `prefix.size()` already parsed, at `prefix_locs`).
  Node* parse_call_args(const OpEntry& e, const Token& name, const Token& callee, ValueMeta* ann,
                        std::vector<Arg> prefix, const std::vector<SourceLoc>& prefix_locs) {
    const OpDef& op = *e.op;
    const auto& sargs = op.schema.args;
    std::vector<Arg> bound(sargs.size());
    uint64_t given = 0;
    size_t n_args = 0;
    bool seen_keyword = false;
    SourceLoc first_extra;
    auto check_type = [&](size_t i, SourceLoc loc) {
      std::string err = check_arg_type(sargs[i].type, bound[i]);
      if (!err.empty()) fail(loc, op.name + " argument '" + sargs[i].name + "': " + err);
    };
    for (; n_args < prefix.size() && n_args < e.n_positional; ++n_args) {
      bound[n_args] = std::move(prefix[n_args]);
      given |= 1ull << n_args;
      check_type(n_args, prefix_locs[n_args]);
    }
    while (!peek().is(')')) {
      if (peek().kind == TokKind::Name && peek(1).is('=')) {
        std::string_view key = take().text;
        take();
        SourceLoc loc = peek().loc;
        size_t idx = 0;
        while (idx < sargs.size() && sargs[idx].name != key) ++idx;
        if (idx == sargs.size()) fail(loc, op.name + " has no argument '" + std::string(key) + "'");
        if ((given >> idx) & 1u)
          fail(loc, op.name + " got argument '" + std::string(key) + "' twice");
        bound[idx] = parse_value(0);
        given |= 1ull << idx;
        if (first_extra.line == 0) check_type(idx, loc);
        seen_keyword = true;
      } else {
        if (seen_keyword) fail(peek().loc, "positional argument follows keyword argument");
        if (peek().at_line_end()) expected(peek(), "')' after arguments");
        SourceLoc loc = peek().loc;
        if (n_args >= e.n_positional) {  // counted, then reported with the count
          if (first_extra.line == 0) first_extra = loc;
          parse_value(0);
        } else {
          bound[n_args] = parse_value(0);
          given |= 1ull << n_args;
          check_type(n_args, loc);
        }
        ++n_args;
      }
      if (!peek().is(',')) break;
      take();
    }
    expect_punct(')', "')' after arguments");
    if (first_extra.line != 0)
      fail(first_extra, op.name + " takes at most " + std::to_string(e.n_positional) +
                            " positional arguments, got " + std::to_string(n_args));
    for (size_t i = 0; i < sargs.size(); ++i) {
      if ((given >> i) & 1u) continue;
      if (!e.has_default[i])
        fail(callee.loc, op.name + " is missing argument '" + sargs[i].name + "' (" +
                             sargs[i].type.to_string() + ")");
      bound[i] = e.defaults[i];
    }
    ValueMeta meta;
    if (ann) {
      meta = std::move(*ann);
      // A view's storage offset is not in its annotation: take it from the inferred metadata when
      // that agrees with the annotation in everything else.
      if (e.is_view && meta.is_tensor()) {
        try {
          ValueMeta inferred = op.meta(MetaArgs(op, bound));
          if (same_printed_meta(inferred, meta))
            meta.tensor.storage_offset = inferred.tensor.storage_offset;
        } catch (const Error&) {
          // the verifier reports it
        }
      }
    } else {
      try {
        meta = infer_meta(op, bound);
      } catch (const Error& err) {
        // Note [Recorded sizes] (verifier.cc): the results of a dynamic_output_shape op are what
        // the getitems that unpack them record.
        if (!op.has_tag(kDynamicOutputShape) || op.schema.returns.size() < 2)
          fail(callee.loc, err.message());
        meta = ValueMeta::tuple(std::vector<ValueMeta>(op.schema.returns.size()));
      }
    }
    return g_->add_call_raw(op, std::move(bound), given, std::move(meta), std::string(name.text));
  }

  // return (a, b) | [a, None] | a | None | pytree.tree_unflatten([...], self._out_spec)
  void parse_return() {
    const Token& ret = take();
    Arg value;
    if (peek().is_name("pytree") && peek(1).is('.')) {
      take();
      take();
      expect_keyword("tree_unflatten", "'tree_unflatten' after 'pytree.'");
      expect_punct('(', "'(' after 'pytree.tree_unflatten'");
      value = parse_value(0);
      expect_punct(',', "', self._out_spec' after the returned values");
      expect_keyword("self", "'self._out_spec'");
      expect_punct('.', "'self._out_spec'");
      expect_keyword("_out_spec", "'self._out_spec'");
      expect_punct(')', "')' after 'self._out_spec'");
    } else if (!peek().at_line_end() && !peek().is(';')) {
      value = parse_value(0);
      if (peek().is(',')) {  // return a, b
        std::vector<Arg> elems;
        elems.push_back(std::move(value));
        while (peek().is(',')) {
          take();
          if (peek().at_line_end() || peek().is(';')) break;
          elems.push_back(parse_value(0));
        }
        value = Arg::of_tuple(std::move(elems));
      }
    }
    Node* out = g_->set_output(std::move(value));
    out->info().loc = ret.loc;
    returned_ = true;
  }

  // --- values ---

  Arg parse_value(int depth) {
    if (depth > kMaxDepth)
      fail(peek().loc, "nesting is too deep (more than " + std::to_string(kMaxDepth) + " levels)");
    const Token& t = peek();
    switch (t.kind) {
      case TokKind::Int: return Arg::of_int(parse_int(take(), false));
      case TokKind::Float: return Arg::of_float(parse_float(take()));
      case TokKind::String: return Arg::of_str(text::decode_string(take()));
      case TokKind::Name: return parse_name_value();
      case TokKind::Punct: break;
      default: expected(t, "a value");
    }
    if (t.is('-')) {
      take();
      const Token& n = peek();
      if (n.kind == TokKind::Int) return Arg::of_int(parse_int(take(), true));
      if (n.kind == TokKind::Float) return Arg::of_float(-parse_float(take()));
      if (n.is_name("inf")) {
        take();
        return Arg::of_float(-std::numeric_limits<double>::infinity());
      }
      expected(n, "a number after '-'");
    }
    if (t.is('[') || t.is('(')) {
      bool is_list = t.is('[');
      char close = is_list ? ']' : ')';
      take();
      std::vector<Arg> elems;
      bool trailing_comma = false;
      while (!peek().is(close)) {
        elems.push_back(parse_value(depth + 1));
        trailing_comma = false;
        if (!peek().is(',')) break;
        take();
        trailing_comma = true;
      }
      if (!peek().is(close))
        expected(peek(), is_list ? "',' or ']' in the list" : "',' or ')' in the tuple");
      take();
      if (is_list) return Arg::of_list(std::move(elems));
      if (elems.size() == 1 && !trailing_comma) return std::move(elems[0]);  // (x) is x
      return Arg::of_tuple(std::move(elems));
    }
    expected(t, "a value");
  }

  Arg parse_name_value() {
    const Token& t = take();
    std::string_view s = t.text;
    switch (s[0]) {
      case 'T':
        if (s == "True") return Arg::of_bool(true);
        break;
      case 'F':
        if (s == "False") return Arg::of_bool(false);
        break;
      case 'N':
        if (s == "None") return Arg::none();
        break;
      case 'i':
        if (s == "inf") return Arg::of_float(std::numeric_limits<double>::infinity());
        break;
      case 'n':
        if (s == "nan") return Arg::of_float(std::numeric_limits<double>::quiet_NaN());
        break;
      case 't':
        if (s == "torch" && peek().is('.')) return parse_torch_attr(t);
        break;
      case 'd':
        if (s == "device" && peek().is('(')) return parse_device();
        break;
    }
    if (const Subgraph** sub = graph_values_.find(s))
      return Arg::of_graph(std::string(s), (*sub)->graph);
    return Arg(lookup(t));
  }

  // torch.float32, torch.long, torch.strided, torch.contiguous_format, torch.device(...),
  // torch.ops.aten.native_dropout.default (an op reference)
  Arg parse_torch_attr(const Token& torch) {
    take();  // '.'
    const Token& a = expect_name("a name after 'torch.'");
    if (a.text == "device" && peek().is('(')) return parse_device();
    if (a.text == "ops" && peek().is('.')) return parse_op_ref(torch);
    if (auto dt = scalar_type_from_torch_name(a.text)) return Arg::of_dtype(*dt);
    if (auto l = layout_from_torch_name(a.text)) return Arg::of_layout(*l);
    if (auto m = memory_format_from_torch_name(a.text)) return Arg::of_memory_format(*m);
    fail(a.loc, "unknown value 'torch." + std::string(a.text) +
                    "' (expected a dtype such as torch.float32, a layout such as torch.strided, "
                    "a memory format such as torch.contiguous_format, or torch.device(...))");
  }

  // torch.ops.<namespace>.<name>.<overload> as a value (after "torch.ops").
  Arg parse_op_ref(const Token& torch) {
    std::vector<std::string_view> segs{"torch", "ops"};
    while (peek().is('.')) {
      take();
      segs.push_back(expect_name("a name after '.'").text);
    }
    std::string text;
    for (std::string_view seg : segs) text += (text.empty() ? "" : ".") + std::string(seg);
    if (segs.size() == 4 && segs[2] == "higher_order")
      fail(torch.loc, "the higher-order op " + q(text) + " cannot be an argument");
    if (segs.size() < 4 || segs.size() > 5)
      fail(torch.loc, "expected an op such as torch.ops.aten.add.Tensor, got " + q(text));
    std::string name = std::string(segs[2]) + "::" + std::string(segs[3]);
    std::string overload = segs.size() == 5 ? std::string(segs[4]) : "default";
    const OpDef* op = find_op(name, overload, torch);
    return Arg::of_op(*op);
  }

  // device(type='cuda', index=0) | device('cuda:0') | device('cuda', 0)
  Arg parse_device() {
    take();  // '('
    std::optional<std::string> type;
    std::optional<int64_t> index;
    SourceLoc type_loc = peek().loc;
    int positional = 0;
    while (!peek().is(')')) {
      std::string_view key;
      if (peek().kind == TokKind::Name && peek(1).is('=')) {
        key = take().text;
        take();
      } else {
        key = positional++ == 0 ? "type" : "index";
      }
      if (key == "type") {
        if (peek().kind != TokKind::String) expected(peek(), "a device type string such as 'cpu'");
        type_loc = peek().loc;
        type = text::decode_string(take());
      } else if (key == "index") {
        if (peek().kind != TokKind::Int) expected(peek(), "a device index");
        index = parse_int(take(), false);
      } else {
        expected(peek(), "'type=' or 'index=' in device(...)");
      }
      if (!peek().is(',')) break;
      take();
    }
    expect_punct(')', "')' after the device");
    if (!type) fail(type_loc, "device(...) needs a type such as 'cpu'");
    auto d = device_from_string(*type);
    if (!d) fail(type_loc, "unknown device " + q(*type) + " (expected cpu, cuda or meta)");
    if (index) {
      if (*index > 65535)
        fail(type_loc, "device index " + std::to_string(*index) + " is too large");
      d->index = static_cast<int>(*index);
    }
    return Arg::of_device(*d);
  }

  int64_t parse_int(const Token& t, bool negate) {
    uint64_t mag = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), mag);
    constexpr uint64_t kMaxMag = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    if (ec != std::errc() || p != t.text.data() + t.text.size() || mag > kMaxMag + (negate ? 1 : 0))
      fail(t.loc, "integer " + std::string(negate ? "-" : "") + quote_bytes(t.text) +
                      " is out of range for a 64-bit int");
    if (negate)
      return mag == kMaxMag + 1 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(mag);
    return static_cast<int64_t>(mag);
  }

  static double parse_float(const Token& t) {
    double v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec == std::errc::result_out_of_range) {
      // Python rounds out-of-range literals to inf or 0, as strtod does.
      std::string s(t.text);
      return std::strtod(s.c_str(), nullptr);
    }
    if (ec != std::errc()) fail(t.loc, "malformed number " + q(t.text));
    return v;
  }

  // --- names, ops, annotations ---

  Node* lookup(const Token& t) {
    Node** n = values_.find(t.text);
    if (!n) fail(t.loc, "'" + std::string(t.text) + "' used before it is defined");
    return *n;
  }

  void check_new_name(const Token& t) {
    static const std::string_view kReserved[] = {"True", "False",  "None", "inf",  "nan",
                                                 "self", "return", "def",  "class"};
    if (t.text.size() <= 6)
      for (auto r : kReserved)
        if (t.text == r) fail(t.loc, "'" + std::string(t.text) + "' cannot name a value");
    if (t.text == "output") fail(t.loc, "name 'output' is reserved for the graph's output node");
    if (values_.contains(t.text) || graph_values_.contains(t.text))
      fail(t.loc, "name '" + std::string(t.text) + "' is defined twice");
  }

  void define_placeholder(const Token& name, ValueMeta meta) {
    check_new_name(name);
    Node* n = g_->add_placeholder(std::string(name.text), std::move(meta));
    n->info().loc = name.loc;
    values_.insert(name.text, n);
  }

  // The higher-order op family a callee names (torch.ops.higher_order.<name>), or nullptr.
  const HigherOrderOpDef* higher_order_family(std::string_view span,
                                              const std::vector<std::string_view>& segs,
                                              const Token& at) {
    size_t first = segs.size() >= 2 && segs[0] == "torch" && segs[1] == "ops" ? 2 : 0;
    if (segs.size() != first + 2 || segs[first] != "higher_order") return nullptr;
    std::string name = "higher_order::" + std::string(segs[first + 1]);
    const HigherOrderOpDef* hop = ops_.find_higher_order(name);
    if (!hop && !ops_.find_known(name)) fail(at.loc, "unknown higher-order op " + q(span));
    return hop;  // nullptr: an op of the table (cond), resolved as any op
  }

  const OpEntry& resolve_op(std::string_view span, const std::vector<std::string_view>& segs,
                            const Token& at) {
    if (const OpEntry** e = op_cache_.find(span)) return **e;
    size_t first = 0;
    if (segs.size() >= 2 && segs[0] == "torch" && segs[1] == "ops") first = 2;
    size_t n = segs.size() - first;
    if (n < 2 || n > 3)
      fail(at.loc, "expected an op such as torch.ops.aten.add.Tensor, got " + q(span));
    std::string name = std::string(segs[first]) + "::" + std::string(segs[first + 1]);
    std::string overload = n == 3 ? std::string(segs[first + 2]) : "default";
    const OpDef* op = find_op(name, overload, at);
    const OpEntry& e = entry(*op);
    op_cache_.insert(span, &e);
    return e;
  }

  // The op `name`.`overload` of the table (declared, or given by its provider); an op neither
  // knows, or one the provider cannot describe, fails at `at`.
  const OpDef* find_op(const std::string& name, const std::string& overload, const Token& at) {
    const OpDef* op = nullptr;
    try {
      op = ops_.find(overload == "default" ? name : name + "." + overload);
    } catch (const Error& e) {
      fail(at.loc, e.message());
    }
    if (!op)
      fail(at.loc, "unknown op '" + name + "." + overload + "'" +
                       (ops_.provider() ? " (" + ops_.provider()->source() + " has none either)"
                                        : std::string()));
    return op;
  }

  // The parser's view of an op, made once per op and parse.
  const OpEntry& entry(const OpDef& op) {
    for (const auto& e : entries_)
      if (e->op == &op) return *e;
    const auto& sargs = op.schema.args;
    if (sargs.size() > 64) throw Error(op.name + ": too many arguments to bind");
    auto e = std::make_unique<OpEntry>();
    e->op = &op;
    while (e->n_positional < sargs.size() && !sargs[e->n_positional].kwarg_only) ++e->n_positional;
    e->defaults.resize(sargs.size());
    e->has_default.resize(sargs.size());
    for (size_t i = 0; i < sargs.size(); ++i) {
      e->has_default[i] = sargs[i].has_default;
      if (sargs[i].has_default) e->defaults[i] = default_arg(sargs[i]);
    }
    e->is_view = op.return_alias_of(0) >= 0 && op.meta;
    entries_.push_back(std::move(e));
    return *entries_.back();
  }

  // The annotation after ':': a string ("f32[4][1]cpu"), or the unquoted form older PyTorch
  // printed (f32[4, 8]), returned as a pseudo string token.
  Token annotation_token(bool stop_at_comma) {
    if (peek().kind == TokKind::String) return take();
    if (peek().kind != TokKind::Name) expected(peek(), "a type annotation such as \"f32[4, 8]\"");
    const Token& first = peek();
    const Token* last = &first;
    int depth = 0;
    while (!peek().at_line_end()) {
      const Token& t = peek();
      if (depth == 0 && (t.is('=') || t.is(';') || t.is(')') || (stop_at_comma && t.is(','))))
        break;
      if (t.is('[') || t.is('(')) ++depth;
      if ((t.is(']') || t.is(')')) && depth > 0) --depth;
      last = &take();
    }
    Token ann = first;
    ann.kind = TokKind::String;
    const char* b = first.text.data();
    ann.text = std::string_view(b, last->text.data() + last->text.size() - b);
    return ann;
  }

  ValueMeta annotation_meta(const Token& t) {
    if (!t.has_escape) {
      if (const ValueMeta* m = ann_cache_.find(t.text)) return *m;
    }
    ValueMeta m;
    try {
      m = parse_annotation(text::decode_string(t));
    } catch (const Error& e) {
      fail(t.loc, e.message());
    }
    if (!t.has_escape) ann_cache_.insert(t.text, m);
    return m;
  }

  text::Lexer lex_;
  const OpTable& ops_;
  std::unique_ptr<Graph> g_;
  std::vector<Token> toks_;
  size_t pos_ = 0;

  text::NameMap<Node*> values_;
  Subgraphs& subgraphs_;
  text::NameMap<const Subgraph*> graph_values_;  // subgraph attributes defined so far
  text::NameMap<const OpEntry*> op_cache_;       // by callee spelling
  std::vector<std::unique_ptr<OpEntry>> entries_;
  std::vector<std::string_view> segments_;
  text::NameMap<ValueMeta> ann_cache_;
  std::unordered_map<std::string_view, Declaration> decls_;
  std::vector<PytreeParam> pytree_params_;
  bool flattened_ = false;
  bool returned_ = false;
};

}  // namespace

bool parse_symbol_hints(std::string_view text, SymbolHints& out, std::string* error) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r'))
      v.remove_suffix(1);
    return v;
  };
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string_view name = trim(item.substr(0, eq == std::string_view::npos ? 0 : eq));
    std::string_view value = eq == std::string_view::npos ? "" : trim(item.substr(eq + 1));
    bool ok =
        !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
    for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    int64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (!ok || value.empty() || ec != std::errc() || end != value.data() + value.size() || v < 0) {
      if (error) *error = "expected SYMBOL=SIZE (such as s0=8), got '" + std::string(item) + "'";
      return false;
    }
    out[std::string(name)] = v;
  }
  return true;
}

namespace {
// The hints of a `# hints: s0=8, s1=16` comment line, if the text has one.
SymbolHints text_hints(std::string_view text) {
  SymbolHints hints;
  for (size_t pos = 0; pos < text.size();) {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    size_t k = line.find_first_not_of(" \t");
    if (k == std::string_view::npos || line.compare(k, 8, "# hints:") != 0) continue;
    SymbolHints h;
    if (parse_symbol_hints(line.substr(k + 8), h, nullptr)) hints.insert(h.begin(), h.end());
  }
  return hints;
}
}  // namespace

namespace {

// A `class NAME(...):` line: where it starts, and the class's name and indentation.
struct ClassLine {
  size_t begin = 0;  // byte offset of the line
  SourceLoc loc;     // of the `class` keyword
  std::string name;
};

// The class lines of the text (each a line whose first word is `class`).
std::vector<ClassLine> class_lines(std::string_view text) {
  std::vector<ClassLine> out;
  int line = 1;
  for (size_t pos = 0; pos < text.size(); ++line) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view l = text.substr(pos, eol - pos);
    size_t k = l.find_first_not_of(" \t");
    if (k != std::string_view::npos && l.compare(k, 6, "class ") == 0) {
      ClassLine c;
      c.begin = pos;
      c.loc = {line, static_cast<int>(k) + 1};
      size_t n = l.find_first_not_of(" \t", k + 6);
      size_t e = n == std::string_view::npos ? l.size() : l.find_first_of("(: \t", n);
      if (n != std::string_view::npos)
        c.name = std::string(l.substr(n, (e == std::string_view::npos ? l.size() : e) - n));
      out.push_back(std::move(c));
    }
    pos = eol + 1;
  }
  return out;
}

// Parses the block of `text` from `begin` (line `line`) to `end`, whose nested classes are
// classes[k0..k1): each nested class is parsed first (with its own nested ones) into a subgraph.
std::unique_ptr<Graph> parse_block(std::string_view text, const OpTable& ops,
                                   const std::vector<ClassLine>& classes, size_t begin, int line,
                                   size_t end, size_t k0, size_t k1) {
  Subgraphs subgraphs;
  for (size_t k = k0; k < k1;) {
    const ClassLine& c = classes[k];
    size_t j = k + 1;
    while (j < k1 && classes[j].loc.col > c.loc.col) ++j;
    size_t child_end = j < k1 ? classes[j].begin : end;
    std::shared_ptr<const Graph> g =
        parse_block(text, ops, classes, c.begin, c.loc.line, child_end, k + 1, j);
    if (c.name.empty() || !subgraphs.emplace(c.name, Subgraph{g, c.loc, false}).second)
      throw Error(c.name.empty() ? "expected a class name after 'class'"
                                 : "subgraph class '" + c.name + "' is defined twice",
                  c.loc);
    k = j;
  }
  size_t own_end = k0 < k1 ? classes[k0].begin : end;
  std::unique_ptr<Graph> g = Parser(text.substr(0, own_end), begin, line, ops, subgraphs).run();
  for (auto& [name, sub] : subgraphs)
    if (!sub.used)
      throw Error(
          "subgraph class '" + name + "' is not used: no 'self." + name + "' attribute reads it",
          sub.loc);
  return g;
}

}  // namespace

std::unique_ptr<Graph> parse_graph(std::string_view text, const OpTable& ops) {
  return parse_graph(text, ops, {});
}

std::unique_ptr<Graph> parse_graph(std::string_view text, const OpTable& ops,
                                   const SymbolHints& hints) {
  SymbolHints all =
      text.find("# hints:") == std::string_view::npos ? SymbolHints() : text_hints(text);
  for (auto& [k, v] : hints) all[k] = v;
  ScopedSymbolHints scope(all.empty() ? ScopedSymbolHints::current() : &all);
  size_t begin = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;  // a UTF-8 byte order mark
  std::vector<ClassLine> classes =
      text.find("class ") == std::string_view::npos ? std::vector<ClassLine>() : class_lines(text);
  // The text's own class line (if it starts with one) heads the whole text; every later class is
  // nested in it, one level deeper.
  size_t first = 0;
  if (!classes.empty()) {
    size_t k = text.find_first_not_of(" \t\r\n", begin);
    while (k != std::string_view::npos && text[k] == '#') {  // comment lines before the class
      size_t eol = text.find('\n', k);
      k = eol == std::string_view::npos ? eol : text.find_first_not_of(" \t\r\n", eol);
    }
    if (k != std::string_view::npos && classes[0].begin <= k && text.compare(k, 6, "class ") == 0)
      first = 1;
    for (size_t i = first; i < classes.size(); ++i)
      if (first && classes[i].loc.col <= classes[0].loc.col)
        throw Error(
            "unexpected 'class': a graph has one forward function (a subgraph's class is "
            "nested, indented inside the graph's class)",
            classes[i].loc);
  }
  return parse_block(text, ops, classes, begin, 1, text.size(), first, classes.size());
}

}  // namespace aotgrad

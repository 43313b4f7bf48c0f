// aotgrad: the graph IR -- Graph, Node and argument values (Arg), in FX's shape.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/name_table.h"
#include "aotgrad/ir/op.h"
#include "aotgrad/ir/tensor_meta.h"

namespace aotgrad {

class Node;
class Graph;

/// An argument value: a reference to a node, a constant, or a list/tuple of these.
struct Arg {
  enum class Kind : uint8_t {
    None,
    Node,
    Int,
    Float,
    Bool,
    Str,
    Dtype,
    Device,
    Layout,
    MemoryFormat,
    List,
    Tuple,
    Op,  // a reference to an op overload (a higher-order op's argument): torch.ops.aten.t.default
    Graph,  // a subgraph (cond's branches): the graph module attribute `str`, e.g. true_graph_0
  };
  Kind kind = Kind::None;
  int64_t i = 0;  // Int, Bool (0/1), Dtype/Layout/MemoryFormat (enum value)
  double f = 0;
  Node* node = nullptr;
  const OpDef* op = nullptr;  // Op
  Device device;
  std::string str;
  std::vector<Arg> list;  // List, Tuple
  /// Graph: the subgraph, a closed function of its placeholders (it uses no node of the graph that
  /// calls it). Shared and never changed once built: copies of a graph share their subgraphs.
  std::shared_ptr<const Graph> graph;

  Arg() = default;
  Arg(Node* n) : kind(n ? Kind::Node : Kind::None), node(n) {}  // NOLINT
  static Arg none() { return {}; }
  static Arg of_int(int64_t v) {
    Arg a;
    a.kind = Kind::Int;
    a.i = v;
    return a;
  }
  static Arg of_float(double v) {
    Arg a;
    a.kind = Kind::Float;
    a.f = v;
    return a;
  }
  static Arg of_bool(bool v) {
    Arg a;
    a.kind = Kind::Bool;
    a.i = v;
    return a;
  }
  static Arg of_str(std::string s) {
    Arg a;
    a.kind = Kind::Str;
    a.str = std::move(s);
    return a;
  }
  static Arg of_dtype(ScalarType t) {
    Arg a;
    a.kind = Kind::Dtype;
    a.i = static_cast<int64_t>(t);
    return a;
  }
  static Arg of_device(Device d) {
    Arg a;
    a.kind = Kind::Device;
    a.device = d;
    return a;
  }
  static Arg of_layout(Layout l) {
    Arg a;
    a.kind = Kind::Layout;
    a.i = static_cast<int64_t>(l);
    return a;
  }
  static Arg of_memory_format(MemoryFormat m) {
    Arg a;
    a.kind = Kind::MemoryFormat;
    a.i = static_cast<int64_t>(m);
    return a;
  }
  static Arg of_list(std::vector<Arg> v) {
    Arg a;
    a.kind = Kind::List;
    a.list = std::move(v);
    return a;
  }
  static Arg of_tuple(std::vector<Arg> v) {
    Arg a;
    a.kind = Kind::Tuple;
    a.list = std::move(v);
    return a;
  }
  static Arg of_op(const OpDef& o) {
    Arg a;
    a.kind = Kind::Op;
    a.op = &o;
    return a;
  }
  /// A subgraph argument, printed as the attribute `name` (`true_graph_0 = self.true_graph_0`).
  static Arg of_graph(std::string name, std::shared_ptr<const Graph> g) {
    Arg a;
    a.kind = Kind::Graph;
    a.str = std::move(name);
    a.graph = std::move(g);
    return a;
  }
  static Arg of_ints(const std::vector<int64_t>& v);
  /// Concrete SymInts become Int; symbolic ones need a node and cannot be made here.
  static Arg of_symints(const SymIntVector& v);

  bool is_none() const { return kind == Kind::None; }
  bool is_node() const { return kind == Kind::Node; }
  bool is_list() const { return kind == Kind::List || kind == Kind::Tuple; }
  ScalarType dtype() const { return static_cast<ScalarType>(i); }
  bool operator==(const Arg& o) const;
  /// Calls f(Node*) for every node referenced, in order, including inside lists.
  template <typename F>
  void for_each_node(F&& f) const {
    if (kind == Kind::Node)
      f(node);
    else if (is_list())
      for (auto& a : list) a.for_each_node(f);
  }
};

/// Python-repr text of an argument: "x", "[1, 2]", "1e-05", "torch.float32", "'tanh'",
/// "torch.ops.aten.native_dropout.default".
std::string arg_to_string(const Arg& a);
void append_arg(std::string& out, const Arg& a);
/// How FX prints an op: "torch.ops.aten.add.Tensor", "torch.ops.higher_order.run_with_rng_state".
void append_op_ref(std::string& out, const OpDef& op);
/// Python's repr() of a float: "0.1", "1e-05", "2.0", "inf", "nan".
void append_python_float(std::string& out, double v);

enum class NodeKind : uint8_t { Placeholder, Call, GetItem, Output };

/// Recompute policy of a node, as torch.utils.checkpoint's CheckpointPolicy.
enum class RecomputePolicy : uint8_t { None, MustSave, PreferSave, MustRecompute, PreferRecompute };
/// CheckpointPolicy's member name: "MUST_SAVE", "PREFER_SAVE", "MUST_RECOMPUTE",
/// "PREFER_RECOMPUTE" ("" for None). The text form writes a node's policy as a trailing comment
/// `# recompute=MUST_RECOMPUTE`.
const char* recompute_policy_name(RecomputePolicy p);
/// The policy of a member name, upper or lower case, optionally prefixed "CheckpointPolicy.";
/// nullopt for anything else.
std::optional<RecomputePolicy> parse_recompute_policy(std::string_view name);

/// Metadata on a node that is not its value's metadata.
struct NodeInfo {
  RecomputePolicy recompute = RecomputePolicy::None;
  bool is_backward = false;
  std::string origin;  // where it came from (a node name, a decomposition, ...)
  /// A call functionalization made of an in-place call: that in-place op, when it declares its own
  /// derivative rule (derivatives.yaml's hardtanh_ reads `result` where hardtanh reads `self`).
  /// The joint graph differentiates the call by that rule, as PyTorch's autograd, which runs above
  /// functionalization, differentiates the in-place call. Not part of the text form.
  const OpDef* inplace_derivative = nullptr;
  /// A placeholder that is a tensor constant of the graph module (make_fx's `_tensor_constant0`,
  /// printed as a get_attr `_tensor_constant0 = self._tensor_constant0`): a lifted input whose
  /// value comes with the graph, not from the caller.
  bool lifted_constant = false;
  /// A detach the capture added where a value made under torch.no_grad is read with grad mode on:
  /// it stands for that value without its history, not for a tensor of its own, and a write
  /// through it writes the value (Note [Values made under no_grad] in
  /// src/providers/fake_tensor.cc). Not part of the text form.
  bool no_grad_read = false;
  /// A no_grad_read detach of a view made under torch.no_grad of a tensor that requires grad:
  /// eagerly that view requires grad, a leaf of its own whose gradient reaches nothing. The
  /// detach's result requires grad (propagate_requires_grad); no gradient flows through it. Not
  /// part of the text form.
  bool no_grad_view_requires_grad = false;
  /// A write the capture recorded under torch.no_grad, which autograd does not see (Note [Writes
  /// under no_grad]). Not part of the text form.
  bool hidden_write = false;
  SourceLoc loc;  // where the text defined it, if parsed
};

/// One FX node: a placeholder, a call of an op overload, a getitem projection, or the output.
/// A node is also the value it defines.
class Node {
 public:
  NodeKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  /// The op called (Call only).
  const OpDef* op() const { return op_; }
  /// Call: one Arg per schema argument (defaults filled in). GetItem: {input, index}.
  /// Output: {returned value}.
  const std::vector<Arg>& args() const { return args_; }
  const Arg& arg(size_t i) const { return args_.at(i); }
  /// Whether a Call's argument i was given explicitly (else it holds the default).
  bool arg_given(size_t i) const { return (given_ >> i) & 1u; }
  uint64_t given_mask() const { return given_; }
  /// The input of a GetItem node and its index.
  Node* getitem_input() const { return args_[0].node; }
  int64_t getitem_index() const { return args_[1].i; }

  const ValueMeta& meta() const { return meta_; }
  ValueMeta& mutable_meta() { return meta_; }
  const TensorMeta& tensor_meta() const;  // throws unless the value is a tensor
  NodeInfo& info() { return info_; }
  const NodeInfo& info() const { return info_; }

  /// Nodes that use this one, once per use, in no particular order.
  const std::vector<Node*>& users() const { return users_; }
  Node* next() const { return next_; }
  Node* prev() const { return prev_; }
  Graph* graph() const { return graph_; }

  /// Replaces argument i (updating use lists).
  void set_arg(size_t i, Arg a, bool given = true);
  /// "node 'add' (aten::add.Tensor)" for messages.
  std::string describe() const;

 private:
  friend class Graph;
  Node() = default;
  void add_uses();
  void drop_uses();

  NodeKind kind_ = NodeKind::Call;
  std::string name_;
  const OpDef* op_ = nullptr;
  std::vector<Arg> args_;
  uint64_t given_ = 0;
  ValueMeta meta_;
  NodeInfo info_;
  std::vector<Node*> users_;
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  Graph* graph_ = nullptr;
};

/// Iteration over the nodes of a graph in order.
class NodeRange {
 public:
  class iterator {
   public:
    explicit iterator(Node* n) : n_(n) {}
    Node* operator*() const { return n_; }
    iterator& operator++() {
      n_ = n_->next();
      return *this;
    }
    bool operator!=(const iterator& o) const { return n_ != o.n_; }
    bool operator==(const iterator& o) const { return n_ == o.n_; }

   private:
    Node* n_;
  };
  NodeRange(Node* first, Node* end) : first_(first), end_(end) {}
  iterator begin() const { return iterator(first_); }
  iterator end() const { return iterator(end_); }

 private:
  Node* first_;
  Node* end_;
};

/// How a graph's signature is printed: plain arguments, or the joint `(primals, tangents)` form.
enum class Signature : uint8_t { Plain, Joint };

/// An ordered list of nodes: placeholders, then calls and getitems in topological order, then one
/// output. Names are unique. New nodes go before the insertion point (the output by default).
class Graph {
 public:
  Graph();
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Appends a placeholder after the existing ones; `name` must be unused.
  Node* add_placeholder(const std::string& name, ValueMeta meta);
  /// Adds a call of `op`: positional arguments then keyword arguments are bound to the schema
  /// (type-checked, defaults filled in) and the result's metadata is inferred. `name` empty: the
  /// FX name derived from the op ("add", "add_1", ...).
  Node* add_call(const OpDef& op, std::vector<Arg> args,
                 std::vector<std::pair<std::string, Arg>> kwargs = {},
                 const std::string& name = "");
  /// Adds a call whose arguments are already bound (one per schema argument) and whose metadata is
  /// given; no inference. Used by the parser and by passes that copy nodes.
  Node* add_call_raw(const OpDef& op, std::vector<Arg> bound_args, uint64_t given_mask,
                     ValueMeta meta, const std::string& name);
  /// Adds `input[index]`; its metadata is the index-th element of input's tuple metadata.
  Node* add_getitem(Node* input, int64_t index, const std::string& name = "");
  /// Sets the graph's output (creating the output node on first use).
  Node* set_output(Arg value);

  /// Makes call `n` a call of `op`, keeping its name, arguments, metadata, info and users. `op`
  /// must bind the same arguments (as an in-place variant does its functional op's).
  void replace_op(Node* n, const OpDef& op);
  /// Removes a node that has no users.
  void erase(Node* n);
  /// Makes every user of `from` use `to` instead (the output node included).
  void replace_all_uses_with(Node* from, Node* to);
  /// New nodes are inserted before `n` (nullptr: before the output, or at the end).
  void set_insertion_point(Node* n) { insert_before_ = n; }
  Node* insertion_point() const { return insert_before_; }

  NodeRange nodes() const { return NodeRange(head_, nullptr); }
  std::vector<Node*> placeholders() const;
  Node* output() const { return output_; }
  size_t size() const { return size_; }
  Node* find(std::string_view name) const;

  /// A fresh name following FX: `base`, then `base_1`, `base_2`, ...; Python builtins and
  /// keywords get a suffix from the start ("sum_1").
  std::string unique_name(std::string_view base);
  /// Reserves `name` exactly; throws if it is taken.
  void claim_name(const std::string& name);
  /// Gives node `n` of this graph the name `name`, which must be free (FX's node.name =).
  void rename(Node* n, std::string name);
  bool has_name(std::string_view name) const;

  /// A deep copy: same nodes, names, metadata, node info and signature.
  std::unique_ptr<Graph> clone() const;
  /// Puts the calls and getitems in the order of `body`, in place: the same nodes (no copy),
  /// after the placeholders and before the output. `body` holds each of them once, each after
  /// the nodes it reads; anything else throws and leaves the graph as it was.
  void reorder(const std::vector<const Node*>& body);

  Signature signature = Signature::Plain;

 private:
  Node* new_node(NodeKind kind, std::string name);
  /// Storage for one node from the graph's blocks (nodes lie in memory in the order they were
  /// made, and a graph frees its nodes' storage a block at a time).
  void* allocate_node();
  void free_node(Node* n);
  void link_before(Node* n, Node* before);
  /// The last node of the leading run of placeholders, found by walking from the head.
  Node* find_last_placeholder() const;

  Node* head_ = nullptr;
  Node* tail_ = nullptr;
  Node* output_ = nullptr;
  Node* insert_before_ = nullptr;
  /// The last of the placeholders that start the list (nullptr: the head is not a placeholder),
  /// so that add_placeholder does not walk them.
  Node* last_placeholder_ = nullptr;
  size_t size_ = 0;
  NameTable names_;
  std::deque<std::string> claimed_;  // names claimed without a node (NameTable keeps views)
  std::unordered_map<std::string, int64_t> name_counters_;
  struct alignas(Node) NodeStorage {
    unsigned char bytes[sizeof(Node)];
  };
  std::vector<std::unique_ptr<NodeStorage[]>> node_blocks_;
  size_t block_used_ = 0;          // nodes taken from the last block
  std::vector<Node*> free_nodes_;  // storage of erased nodes, reused first
};

/// Copies `callee`'s calls and getitems, in order, into `g` before its insertion point, with
/// placeholder i of `callee` replaced by `inputs[i]` (a node of `g`, or a constant); returns
/// `callee`'s output argument with its nodes replaced by their copies. Metadata and node info are
/// copied, not inferred; names are fresh FX names of `g`.
Arg inline_graph(Graph& g, const Graph& callee, const std::vector<Arg>& inputs);

/// A new graph of `body` (calls and getitems of one graph, in its order), as a function of
/// `inputs` (nodes of that graph, each a placeholder named `input_names[i]` with its metadata):
/// copies of the body's nodes with FX names of their own, returning the copies of `results` (body
/// nodes or inputs) as a tuple. Throws Error naming a body node that uses a node that is neither
/// an input nor an earlier body node.
std::unique_ptr<Graph> outline_graph(const std::vector<Node*>& inputs,
                                     const std::vector<std::string>& input_names,
                                     const std::vector<Node*>& body,
                                     const std::vector<Node*>& results);

/// Binds positional and keyword arguments to `op`'s schema: returns one Arg per schema argument
/// (defaults filled in) and the mask of those given. Throws Error naming the op and argument on a
/// missing, unknown, duplicated or ill-typed argument.
std::pair<std::vector<Arg>, uint64_t> bind_arguments(
    const OpDef& op, std::vector<Arg> args, std::vector<std::pair<std::string, Arg>> kwargs);
/// The default value of schema argument `a` as an Arg.
Arg default_arg(const SchemaArg& a);
/// Checks that `a` fits schema type `t`; returns an error text or "" when it fits.
std::string check_arg_type(const TypeRef& t, const Arg& a);
/// Runs op's meta function on bound arguments. Throws Error prefixed with the op name.
ValueMeta infer_meta(const OpDef& op, const std::vector<Arg>& bound_args);

}  // namespace aotgrad

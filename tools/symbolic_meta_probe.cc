// aotgrad: does libtorch's own C++ trace symbolic sizes? (issue 41, "Symbolic capture from C++")
//
// Meta tensors whose sizes are c10::SymInts of a minimal SymNodeImpl (an expression and a hint,
// guards taken on the hint and counted), run through about twenty ATen ops a model uses. Each line
// prints the result's symbolic sizes or libtorch's error. On libtorch 2.11 every op fails:
// TensorIterator refuses symbolic shapes (add, gelu, sdpa), the Meta kernels of views expect
// concrete integers, and most others reach for the Python interpreter that PyTorch's symbolic
// tracing runs beside them (its meta functions and decompositions are Python). So a C++ symbolic
// trace must infer sizes with aotgrad's own meta functions, not libtorch's kernels.
//
// Build and run against the venv's libtorch (not part of the CMake build):
//   TP=$(.venv/bin/python -c "import torch, os; print(os.path.dirname(torch.__file__))")
//   g++ -std=c++17 tools/symbolic_meta_probe.cc -I$TP/include \
//     -I$TP/include/torch/csrc/api/include -L$TP/lib -ltorch -ltorch_cpu -lc10 \
//     -Wl,-rpath,$TP/lib -o /tmp/symbolic_meta_probe && /tmp/symbolic_meta_probe
#include <ATen/ATen.h>
#include <c10/core/SymNodeImpl.h>

#include <functional>
#include <iostream>
#include <vector>

// An expression with a hint: enough of a SymNodeImpl for libtorch's size arithmetic.
struct Node : c10::SymNodeImpl {
  std::string e;
  int64_t h;
  bool isint;
  Node(std::string e, int64_t h, bool i = true) : e(std::move(e)), h(h), isint(i) {}
  static c10::SymNode mk(std::string e, int64_t h, bool i = true) {
    return c10::make_intrusive<Node>(std::move(e), h, i);
  }
  static const Node& of(const c10::SymNode& n) { return static_cast<const Node&>(*n); }
  bool is_int() override { return isint; }
  bool is_bool() override { return !isint; }
  bool is_float() override { return false; }
  c10::SymNode bin(const char* op, const c10::SymNode& o, int64_t v, bool i = true) {
    return mk("(" + e + op + of(o).e + ")", v, i);
  }
  c10::SymNode add(const c10::SymNode& o) override { return bin("+", o, h + of(o).h); }
  c10::SymNode sub(const c10::SymNode& o) override { return bin("-", o, h - of(o).h); }
  c10::SymNode mul(const c10::SymNode& o) override { return bin("*", o, h * of(o).h); }
  c10::SymNode floordiv(const c10::SymNode& o) override { return bin("//", o, h / of(o).h); }
  c10::SymNode int_floordiv(const c10::SymNode& o) override { return bin("//", o, h / of(o).h); }
  c10::SymNode mod(const c10::SymNode& o) override { return bin("%", o, h % of(o).h); }
  c10::SymNode eq(const c10::SymNode& o) override { return bin("==", o, h == of(o).h, false); }
  c10::SymNode ne(const c10::SymNode& o) override { return bin("!=", o, h != of(o).h, false); }
  c10::SymNode lt(const c10::SymNode& o) override { return bin("<", o, h < of(o).h, false); }
  c10::SymNode le(const c10::SymNode& o) override { return bin("<=", o, h <= of(o).h, false); }
  c10::SymNode gt(const c10::SymNode& o) override { return bin(">", o, h > of(o).h, false); }
  c10::SymNode ge(const c10::SymNode& o) override { return bin(">=", o, h >= of(o).h, false); }
  c10::SymNode sym_min(const c10::SymNode& o) override {
    return mk("min(" + e + "," + of(o).e + ")", std::min(h, of(o).h));
  }
  c10::SymNode sym_max(const c10::SymNode& o) override {
    return mk("max(" + e + "," + of(o).e + ")", std::max(h, of(o).h));
  }
  c10::SymNode sym_and(const c10::SymNode& o) override { return bin("&", o, h && of(o).h, false); }
  c10::SymNode sym_or(const c10::SymNode& o) override { return bin("|", o, h || of(o).h, false); }
  c10::SymNode sym_not() override { return mk("!" + e, !h, false); }
  c10::SymNode neg() override { return mk("-" + e, -h); }
  c10::SymNode clone() override { return mk(e, h, isint); }
  c10::SymNode wrap_int(int64_t n) override { return mk(std::to_string(n), n); }
  c10::SymNode wrap_bool(bool b) override { return mk(b ? "True" : "False", b, false); }
  c10::SymNode is_contiguous(at::ArrayRef<c10::SymNode>, at::ArrayRef<c10::SymNode>) override {
    return mk("contig", 1, false);
  }
  c10::SymNode is_non_overlapping_and_dense(at::ArrayRef<c10::SymNode>,
                                            at::ArrayRef<c10::SymNode>) override {
    return mk("nod", 1, false);
  }
  c10::SymNode is_channels_last_contiguous_2d(at::ArrayRef<c10::SymNode>,
                                              at::ArrayRef<c10::SymNode>) override {
    return mk("cl", 0, false);
  }
  c10::SymNode is_channels_last_strides_2d(at::ArrayRef<c10::SymNode>,
                                           at::ArrayRef<c10::SymNode>) override {
    return mk("cl", 0, false);
  }
  c10::SymNode is_channels_last_contiguous_3d(at::ArrayRef<c10::SymNode>,
                                              at::ArrayRef<c10::SymNode>) override {
    return mk("cl", 0, false);
  }
  c10::SymNode is_channels_last_strides_3d(at::ArrayRef<c10::SymNode>,
                                           at::ArrayRef<c10::SymNode>) override {
    return mk("cl", 0, false);
  }
  static inline int guards = 0;
  int64_t guard_int(const char*, int64_t) override {
    ++guards;
    return h;
  }
  bool guard_bool(const char*, int64_t) override {
    ++guards;
    return h;
  }
  bool guard_size_oblivious(const char*, int64_t) override {
    ++guards;
    return h;
  }
  bool guard_or_false(const char*, int64_t) override {
    ++guards;
    return h;
  }
  bool guard_or_true(const char*, int64_t) override {
    ++guards;
    return h;
  }
  bool expect_true(const char*, int64_t) override { return h; }
  int64_t int_() override { return h; }
  bool bool_() override { return h; }
  bool has_hint() override { return true; }
  std::string str() override { return e; }
  std::optional<int64_t> maybe_as_int() override { return std::nullopt; }
  bool is_symbolic() override { return true; }
};

std::string sizes(const at::Tensor& t) {
  std::string s = "[";
  for (const c10::SymInt& d : t.sym_sizes())
    s += (d.is_heap_allocated() ? d.toSymNodeImplUnowned()->str()
                                : std::to_string(d.as_int_unchecked())) +
         ",";
  return s + "]";
}

int main() {
  c10::SymInt s0(Node::mk("s0", 4)), s1(Node::mk("s1", 6));
  auto meta = at::TensorOptions().device(at::kMeta);
  at::Tensor x = at::empty_symint({s0, 8}, meta), w = at::empty_symint({16, 8}, meta);
  at::Tensor img = at::empty_symint({s0, 3, 32, 32}, meta),
             cw = at::empty_symint({8, 3, 3, 3}, meta);
  at::Tensor seq = at::empty_symint({2, s1, 16}, meta);
  std::vector<std::pair<const char*, std::function<at::Tensor()>>> cases = {
      {"add", [&] { return x + x; }},
      {"mm", [&] { return at::mm(x, w.t()); }},
      {"linear", [&] { return at::linear(x, w); }},
      {"relu", [&] { return at::relu(x); }},
      {"softmax", [&] { return at::softmax(x, 1); }},
      {"layer_norm", [&] { return at::layer_norm(x, {8}); }},
      {"sum", [&] { return x.sum(0); }},
      {"view",
       [&] {
         return x.view_symint({s0 * 2, 4});
       }},
      {"reshape_-1", [&] { return x.reshape({-1}); }},
      {"slice_half", [&] { return x.slice_symint(0, 0, s0 / 2); }},
      {"cat",
       [&] {
         return at::cat({x, x}, 0);
       }},
      {"conv2d", [&] { return at::conv2d(img, cw); }},
      {"max_pool2d",
       [&] {
         return at::max_pool2d(img, {2, 2});
       }},
      {"batch_norm", [&] { return at::batch_norm(img, {}, {}, {}, {}, true, 0.1, 1e-5, false); }},
      {"bmm_attn", [&] { return at::matmul(seq, seq.transpose(1, 2)); }},
      {"sdpa", [&] { return at::scaled_dot_product_attention(seq, seq, seq); }},
      {"embedding",
       [&] { return at::embedding(w, at::empty_symint({s0}, meta.dtype(at::kLong))); }},
      {"gelu", [&] { return at::gelu(x, "tanh"); }},
      {"mean", [&] { return x.mean({1}, true); }},
      {"expand",
       [&] {
         return x.unsqueeze(0).expand_symint({s1, s0, 8});
       }},
      {"nll", [&] { return at::nll_loss(x, at::empty_symint({s0}, meta.dtype(at::kLong))); }},
  };
  for (auto& [name, f] : cases) {
    Node::guards = 0;
    try {
      at::Tensor r = f();
      std::cout << name << ": " << sizes(r) << " guards " << Node::guards << "\n";
    } catch (const std::exception& e) {
      std::string m = e.what();
      std::cout << name << ": ERROR " << m.substr(0, m.find('\n')) << "\n";
    }
  }
}

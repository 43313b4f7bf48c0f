// aotgrad: TensorMeta helpers and the annotation text form.
#include "aotgrad/ir/tensor_meta.h"

#include "aotgrad/ir/error.h"
#include "aotgrad/support/quote.h"

namespace aotgrad {

int64_t TensorMeta::nbytes_hint() const {
  int64_t n = 1;
  for (auto& s : sizes) n *= s.hint_or(4096);
  return n * element_size(dtype);
}

bool TensorMeta::is_contiguous() const {
  for (auto& s : sizes)
    if (s == 0) return true;
  SymInt expected = 1;
  for (int64_t i = dim() - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected = expected * sizes[i];
  }
  return true;
}

bool TensorMeta::same_layout(const TensorMeta& o) const {
  return dtype == o.dtype && device == o.device && sizes == o.sizes && strides == o.strides &&
         storage_offset == o.storage_offset;
}

void TensorMeta::append_annotation(std::string& out) const {
  out += short_name(dtype);
  out += '[';
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ", ";
    sizes[i].append_to(out);
  }
  out += "][";
  for (size_t i = 0; i < strides.size(); ++i) {
    if (i) out += ", ";
    strides[i].append_to(out);
  }
  out += ']';
  out += to_string(device);
}

std::string TensorMeta::annotation() const {
  std::string s;
  append_annotation(s);
  return s;
}

SymIntVector contiguous_strides(const SymIntVector& sizes) {
  SymIntVector strides(sizes.size());
  SymInt acc = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    strides[i] = acc;
    // ATen: stride of the next-outer dim multiplies by max(size, 1).
    acc = sizes[i] == 0 ? acc : acc * sizes[i];
  }
  return strides;
}

SymIntVector channels_last_strides(const SymIntVector& sizes) {
  auto max1 = [](const SymInt& s) { return s == 0 ? SymInt(1) : s; };
  SymIntVector st(sizes.size());
  if (sizes.size() == 4) {  // N C H W, memory order N H W C
    st[1] = 1;
    st[3] = max1(sizes[1]);
    st[2] = st[3] * max1(sizes[3]);
    st[0] = st[2] * max1(sizes[2]);
  } else if (sizes.size() == 5) {  // N C D H W, memory order N D H W C
    st[1] = 1;
    st[4] = max1(sizes[1]);
    st[3] = st[4] * max1(sizes[4]);
    st[2] = st[3] * max1(sizes[3]);
    st[0] = st[2] * max1(sizes[2]);
  } else {
    return contiguous_strides(sizes);
  }
  return st;
}

TensorMeta make_tensor_meta(ScalarType dtype, SymIntVector sizes, Device device) {
  TensorMeta t;
  t.dtype = dtype;
  t.strides = contiguous_strides(sizes);
  t.sizes = std::move(sizes);
  t.device = device;
  return t;
}

bool ValueMeta::same_as(const ValueMeta& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::None: return true;
    case Kind::Tensor: return tensor.same_layout(o.tensor);
    case Kind::SymInt: return sym == o.sym;
    case Kind::SymFloat:
    case Kind::SymBool: return true;
    case Kind::Tuple:
      if (elems.size() != o.elems.size()) return false;
      for (size_t i = 0; i < elems.size(); ++i)
        if (!elems[i].same_as(o.elems[i])) return false;
      return true;
  }
  return false;
}

std::string ValueMeta::annotation() const {
  switch (kind) {
    case Kind::Tensor: return tensor.annotation();
    case Kind::SymInt: return "Sym(" + sym.to_string() + ")";
    case Kind::SymFloat:
    case Kind::SymBool: return "Sym(" + sym_text + ")";
    default: return "";
  }
}

std::string ValueMeta::describe() const {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Tensor: return "tensor " + tensor.annotation();
    case Kind::SymInt: return "Sym(" + sym.to_string() + ")";
    case Kind::SymFloat: return "SymFloat(" + escape_bytes(sym_text) + ")";
    case Kind::SymBool: return "SymBool(" + escape_bytes(sym_text) + ")";
    case Kind::Tuple: return (is_list ? "list of " : "tuple of ") + std::to_string(elems.size());
  }
  return "?";
}

namespace {

// Splits "4, s0 + 1, 8" at top-level commas.
std::vector<std::string> split_dims(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  auto trim = [](std::string x) {
    size_t a = x.find_first_not_of(' '), b = x.find_last_not_of(' ');
    return a == std::string::npos ? std::string() : x.substr(a, b - a + 1);
  };
  if (!trim(cur).empty() || !out.empty()) out.push_back(cur);
  for (auto& x : out) x = trim(x);
  return out;
}

SymIntVector parse_dims(const std::string& text, const std::string& whole) {
  SymIntVector dims;
  for (auto& d : split_dims(text)) {
    std::string err;
    if (d.empty()) throw Error("annotation \"" + escape_bytes(whole) + "\": empty dimension");
    auto v = parse_sym_expr(d, &err);
    if (!v) throw Error("annotation \"" + escape_bytes(whole) + "\": " + err);
    dims.push_back(*v);
  }
  return dims;
}

}  // namespace

ValueMeta parse_annotation(const std::string& text) {
  if (text.rfind("Sym(", 0) == 0) {
    if (text.back() != ')')
      throw Error("annotation \"" + escape_bytes(text) + "\": expected ')' at the end");
    std::string inner = text.substr(4, text.size() - 5);
    std::string err;
    if (auto v = parse_sym_expr(inner, &err)) return ValueMeta::of_sym(*v);
    ValueMeta m;  // a SymFloat / SymBool expression we keep as text
    m.kind =
        inner.find('.') != std::string::npos ? ValueMeta::Kind::SymFloat : ValueMeta::Kind::SymBool;
    m.sym_text = inner;
    return m;
  }
  size_t lb = text.find('[');
  if (lb == std::string::npos)
    throw Error("annotation \"" + escape_bytes(text) +
                "\": expected '<dtype>[<sizes>]' or 'Sym(...)'");
  auto dtype = scalar_type_from_short_name(text.substr(0, lb));
  if (!dtype)
    throw Error("annotation \"" + escape_bytes(text) + "\": unknown dtype '" +
                escape_bytes(text.substr(0, lb)) +
                "' (expected one of f64 f32 f16 bf16 i64 i32 i16 i8 u8 b8 c64 c128)");
  size_t rb = text.find(']', lb);
  if (rb == std::string::npos)
    throw Error("annotation \"" + escape_bytes(text) + "\": expected ']' after sizes");
  TensorMeta t;
  t.dtype = *dtype;
  t.sizes = parse_dims(text.substr(lb + 1, rb - lb - 1), text);
  size_t pos = rb + 1;
  if (pos < text.size() && text[pos] == '[') {
    size_t rb2 = text.find(']', pos);
    if (rb2 == std::string::npos)
      throw Error("annotation \"" + escape_bytes(text) + "\": expected ']' after strides");
    t.strides = parse_dims(text.substr(pos + 1, rb2 - pos - 1), text);
    if (t.strides.size() != t.sizes.size())
      throw Error("annotation \"" + escape_bytes(text) + "\": " + std::to_string(t.sizes.size()) +
                  " sizes but " + std::to_string(t.strides.size()) + " strides");
    pos = rb2 + 1;
  } else {
    t.strides = contiguous_strides(t.sizes);
  }
  if (pos < text.size()) {
    auto dev = device_from_string(text.substr(pos));
    if (!dev)
      throw Error("annotation \"" + escape_bytes(text) + "\": unknown device '" +
                  escape_bytes(text.substr(pos)) + "' (expected cpu, cuda or meta)");
    t.device = *dev;
  }
  return ValueMeta::of(std::move(t));
}

}  // namespace aotgrad

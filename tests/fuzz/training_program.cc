// aotgrad training fuzzer: the instruction set (ATen calls) and the program text form.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <functional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "training_fuzz.h"

namespace aotgrad::fuzz {
namespace {

using Params = std::vector<double>;
using Operands = std::vector<at::Tensor>;

int64_t I(const Params& p, size_t k) {
  if (k >= p.size()) throw std::runtime_error("missing parameter " + std::to_string(k));
  return static_cast<int64_t>(p[k]);
}

std::vector<int64_t> ints(const Params& p, size_t from, size_t n) {
  std::vector<int64_t> out;
  for (size_t k = from; k < from + n; ++k) out.push_back(I(p, k));
  return out;
}

struct OpDef {
  size_t num_in;
  bool writes;
  std::function<at::Tensor(const Operands&, const Params&)> fn;
};

const std::map<std::string, OpDef>& ops() {
  static const std::map<std::string, OpDef> table = {
      // Views.
      {"slice",
       {1, false, [](auto& t, auto& p) { return t[0].slice(I(p, 0), I(p, 1), I(p, 2), I(p, 3)); }}},
      {"select", {1, false, [](auto& t, auto& p) { return t[0].select(I(p, 0), I(p, 1)); }}},
      {"view", {1, false, [](auto& t, auto& p) { return t[0].view(ints(p, 0, p.size())); }}},
      {"transpose", {1, false, [](auto& t, auto& p) { return t[0].transpose(I(p, 0), I(p, 1)); }}},
      // as_strided n sizes... strides... offset
      {"as_strided",
       {1, false,
        [](auto& t, auto& p) {
          size_t n = static_cast<size_t>(I(p, 0));
          return t[0].as_strided(ints(p, 1, n), ints(p, 1 + n, n), I(p, 1 + 2 * n));
        }}},
      {"unbind", {1, false, [](auto& t, auto& p) { return t[0].unbind(I(p, 0)).at(I(p, 1)); }}},
      // split size dim index
      {"split",
       {1, false, [](auto& t, auto& p) { return t[0].split(I(p, 0), I(p, 1)).at(I(p, 2)); }}},
      {"diagonal",
       {1, false, [](auto& t, auto& p) { return t[0].diagonal(I(p, 0), I(p, 1), I(p, 2)); }}},
      {"expand", {1, false, [](auto& t, auto& p) { return t[0].expand(ints(p, 0, p.size())); }}},
      {"detach", {1, false, [](auto& t, auto&) { return t[0].detach(); }}},
      // Functional ops.
      {"add", {2, false, [](auto& t, auto&) { return t[0] + t[1]; }}},
      {"sub", {2, false, [](auto& t, auto&) { return t[0] - t[1]; }}},
      {"mul", {2, false, [](auto& t, auto&) { return t[0] * t[1]; }}},
      {"mulc", {1, false, [](auto& t, auto& p) { return t[0] * p.at(0); }}},
      {"sin", {1, false, [](auto& t, auto&) { return t[0].sin(); }}},
      {"tanh", {1, false, [](auto& t, auto&) { return t[0].tanh(); }}},
      {"sum", {1, false, [](auto& t, auto&) { return t[0].sum(); }}},
      {"sumdim", {1, false, [](auto& t, auto& p) { return t[0].sum(I(p, 0)); }}},
      {"clone", {1, false, [](auto& t, auto&) { return t[0].clone(); }}},
      // Random: dropout(p) in training.
      {"dropout", {1, false, [](auto& t, auto& p) { return at::dropout(t[0], p.at(0), true); }}},
      // In-place ops: the value is the written tensor.
      {"add_", {2, true, [](auto& t, auto&) { return t[0].add_(t[1]); }}},
      {"mul_", {2, true, [](auto& t, auto&) { return t[0].mul_(t[1]); }}},
      {"mulc_", {1, true, [](auto& t, auto& p) { return t[0].mul_(p.at(0)); }}},
      {"sin_", {1, true, [](auto& t, auto&) { return t[0].sin_(); }}},
      {"copy_", {2, true, [](auto& t, auto&) { return t[0].copy_(t[1]); }}},
  };
  return table;
}

// Whether two elements of `t` are one memory location (small tensors: every offset listed).
bool repeats_an_element(const at::Tensor& t) {
  std::set<int64_t> seen;
  std::vector<int64_t> index(static_cast<size_t>(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t offset = 0;
    for (int64_t d = 0; d < t.dim(); ++d) offset += index[d] * t.stride(d);
    if (!seen.insert(offset).second) return true;
    for (int64_t d = t.dim() - 1; d >= 0 && ++index[d] == t.size(d); --d) index[d] = 0;
  }
  return false;
}

const OpDef& op_def(const std::string& op) {
  auto it = ops().find(op);
  if (it == ops().end()) throw std::runtime_error("unknown op '" + op + "'");
  return it->second;
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

void print_instr(std::ostringstream& os, char sigil, int value, const Instr& ins) {
  os << sigil << value << " = " << (ins.no_grad ? "nograd " : "") << ins.op;
  for (int v : ins.in) os << " " << sigil << v;
  for (double x : ins.params) os << " " << fmt(x);
  os << "\n";
}

[[noreturn]] void fail(int line, const std::string& what) {
  throw std::runtime_error("program line " + std::to_string(line) + ": " + what);
}

int value_ref(const std::string& tok, char sigil, int limit, int line) {
  if (tok.size() < 2 || tok[0] != sigil)
    fail(line, "expected " + std::string(1, sigil) + "N, got '" + tok + "'");
  int v = std::stoi(tok.substr(1));
  if (v < 0 || v >= limit) fail(line, "value " + tok + " is not defined yet");
  return v;
}

}  // namespace

bool known_op(const std::string& op) { return ops().count(op) > 0; }
bool writes_first(const std::string& op) { return op_def(op).writes; }
bool is_view(const std::string& op) {
  static const std::set<std::string> kViews = {"slice", "select",   "view",   "transpose", "unbind",
                                               "split", "diagonal", "expand", "as_strided"};
  return kViews.count(op) > 0;
}

void apply(const Instr& ins, std::vector<at::Tensor>& table) {
  const OpDef& def = op_def(ins.op);
  if (ins.in.size() != def.num_in)
    throw std::runtime_error(ins.op + " takes " + std::to_string(def.num_in) + " operands");
  Operands operands;
  for (int v : ins.in) operands.push_back(table.at(static_cast<size_t>(v)));
  // A write whose other operand overlaps the written tensor without being the same view reads
  // what it writes in an order ATen does not define: not a program the comparison can judge.
  if (def.writes && operands.size() > 1 && operands[1].is_alias_of(operands[0]) &&
      !(operands[1].sizes() == operands[0].sizes() &&
        operands[1].strides() == operands[0].strides() &&
        operands[1].storage_offset() == operands[0].storage_offset()))
    throw std::runtime_error(ins.op + ": the operand overlaps the written tensor");
  // Likewise a write into a tensor of which two elements are one memory location (an as_strided
  // window that ATen's overlap check calls too hard to tell).
  const bool self_copy = ins.op == "copy_" && operands[1].is_same(operands[0]);  // a no-op
  if (def.writes && !self_copy && repeats_an_element(operands[0]))
    throw std::runtime_error(ins.op + ": the written tensor repeats a memory location");
  if (ins.no_grad) {
    at::NoGradGuard guard;
    table.push_back(def.fn(operands, ins.params));
  } else {
    table.push_back(def.fn(operands, ins.params));
  }
}

std::vector<at::Tensor> run_body(const Program& p, const std::vector<at::Tensor>& args) {
  std::vector<at::Tensor> table = args;
  for (const Instr& ins : p.body) apply(ins, table);
  std::vector<at::Tensor> out;
  for (int v : p.outputs) out.push_back(table.at(static_cast<size_t>(v)));
  return out;
}

std::string print_program(const Program& p) {
  std::ostringstream os;
  for (size_t i = 0; i < p.leaves.size(); ++i) {
    const Leaf& l = p.leaves[i];
    os << "leaf %" << i << " [";
    for (size_t d = 0; d < l.shape.size(); ++d) os << (d ? "," : "") << l.shape[d];
    os << "]" << (l.requires_grad ? " requires_grad" : "") << (l.pregrad ? " pregrad" : "") << "\n";
  }
  for (size_t i = 0; i < p.setup.size(); ++i)
    print_instr(os, '%', static_cast<int>(p.leaves.size() + i), p.setup[i]);
  os << "args";
  for (int a : p.args) os << " %" << a;
  os << "\n";
  for (size_t i = 0; i < p.body.size(); ++i)
    print_instr(os, '$', static_cast<int>(p.args.size() + i), p.body[i]);
  os << "out";
  for (int o : p.outputs) os << " $" << o;
  os << "\n";
  return os.str();
}

Program parse_program(const std::string& text) {
  Program p;
  std::istringstream is(text);
  std::string raw;
  int line = 0;
  bool in_body = false, done = false;
  while (std::getline(is, raw)) {
    ++line;
    raw = raw.substr(0, raw.find('#'));
    std::istringstream ls(raw);
    std::vector<std::string> tok;
    for (std::string t; ls >> t;) tok.push_back(t);
    if (tok.empty()) continue;
    if (done) fail(line, "nothing may follow 'out'");
    const int num_setup = static_cast<int>(p.leaves.size() + p.setup.size());
    const int num_body = static_cast<int>(p.args.size() + p.body.size());
    if (tok[0] == "leaf") {
      if (in_body || !p.setup.empty()) fail(line, "leaves come first");
      if (tok.size() < 3) fail(line, "expected 'leaf %N [SIZES] [requires_grad] [pregrad]'");
      if (value_ref(tok[1], '%', num_setup + 1, line) != num_setup)
        fail(line, "leaves are numbered in order");
      Leaf l;
      std::string s = tok[2];
      if (s.size() < 2 || s.front() != '[' || s.back() != ']') fail(line, "expected [SIZES]");
      std::istringstream ss(s.substr(1, s.size() - 2));
      for (std::string d; std::getline(ss, d, ',');) l.shape.push_back(std::stoll(d));
      for (size_t k = 3; k < tok.size(); ++k) {
        if (tok[k] == "requires_grad")
          l.requires_grad = true;
        else if (tok[k] == "pregrad")
          l.pregrad = true;
        else
          fail(line, "unknown leaf flag '" + tok[k] + "'");
      }
      p.leaves.push_back(l);
    } else if (tok[0] == "args") {
      if (in_body) fail(line, "a second 'args'");
      in_body = true;
      for (size_t k = 1; k < tok.size(); ++k)
        p.args.push_back(value_ref(tok[k], '%', num_setup, line));
    } else if (tok[0] == "out") {
      if (!in_body) fail(line, "'out' before 'args'");
      for (size_t k = 1; k < tok.size(); ++k)
        p.outputs.push_back(value_ref(tok[k], '$', num_body, line));
      done = true;
    } else {
      const char sigil = in_body ? '$' : '%';
      const int defined = in_body ? num_body : num_setup;
      if (tok.size() < 3 || tok[1] != "=")
        fail(line, "expected 'leaf', 'args', 'out' or an instruction");
      if (value_ref(tok[0], sigil, defined + 1, line) != defined)
        fail(line, "values are numbered in order");
      Instr ins;
      size_t k = 2;
      if (tok[k] == "nograd") {
        ins.no_grad = true;
        ++k;
      }
      if (k >= tok.size() || !known_op(tok[k])) fail(line, "unknown op");
      ins.op = tok[k++];
      for (; k < tok.size(); ++k) {
        if (tok[k][0] == sigil)
          ins.in.push_back(value_ref(tok[k], sigil, defined, line));
        else
          ins.params.push_back(std::stod(tok[k]));
      }
      (in_body ? p.body : p.setup).push_back(ins);
    }
  }
  if (!done) throw std::runtime_error("program: no 'out' line");
  return p;
}

}  // namespace aotgrad::fuzz

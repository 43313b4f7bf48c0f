// aotgrad training fuzzer: delta debugging. Each step removes one piece of the program (an
// output, an instruction, an argument, a setup value, a leaf's flags) and keeps the smaller
// program when it still mismatches under the failing configuration; it stops at a fixed point.
#include <cctype>
#include <functional>

#include "training_fuzz.h"

namespace aotgrad::fuzz {
namespace {

// The kind of a mismatch: its description without numbers, up to a '(' or a newline
// ("grad of leaf %: values differ "), so that shrinking keeps the bug it started from.
std::string kind_of(const std::string& detail) {
  std::string k;
  for (char c : detail.substr(0, detail.find_first_of("(\n")))
    if (!std::isdigit(static_cast<unsigned char>(c))) k += c;
  return k;
}

bool fails(const Program& p, const Config& c, const std::string& kind) {
  if (p.outputs.empty()) return false;
  try {
    ConfigResult r = run_case(p, {c}).at(0);
    return r.verdict == Verdict::kMismatch && kind_of(r.detail) == kind;
  } catch (const std::exception&) {
    return false;  // a program the runner cannot even set up
  }
}

// Remaps the references to a sequence of values in which value `victim` goes: references to it
// become `repl` (-1: the instruction or output that refers to it goes too, and so on).
struct Remap {
  int victim, repl;
  std::vector<int> map;  // old value -> new value, -1 when gone
  int operator()(int v) const { return v < static_cast<int>(map.size()) ? map[v] : -1; }
};

// Rebuilds `ins` (values `first`...) over a value numbering in which values below `first` map by
// `m`; appends to `out`, extending m.map. Instructions that lose an operand are dropped.
void remap_instrs(const std::vector<Instr>& ins, int first, Remap& m, std::vector<Instr>& out,
                  int next) {
  for (size_t i = 0; i < ins.size(); ++i) {
    const int old = first + static_cast<int>(i);
    Instr n = ins[i];
    bool ok = true;
    if (old == m.victim) {
      m.map.push_back(m.repl >= 0 ? m.map[m.repl] : -1);
      continue;
    }
    for (int& v : n.in) {
      v = m(v);
      ok = ok && v >= 0;
    }
    m.map.push_back(ok ? next : -1);
    if (ok) {
      out.push_back(n);
      ++next;
    }
  }
}

// `p` without body value `victim` (an argument or an instruction's value), references to it
// replaced by `repl` (an earlier value) or dropped with what depends on them.
Program drop_body_value(const Program& p, int victim, int repl) {
  Program q = p;
  Remap m{victim, repl, {}};
  q.args.clear();
  q.body.clear();
  for (size_t a = 0; a < p.args.size(); ++a) {
    if (static_cast<int>(a) == victim) {
      m.map.push_back(repl >= 0 ? m.map[repl] : -1);
    } else {
      m.map.push_back(static_cast<int>(q.args.size()));
      q.args.push_back(p.args[a]);
    }
  }
  remap_instrs(p.body, static_cast<int>(p.args.size()), m, q.body, static_cast<int>(q.args.size()));
  q.outputs.clear();
  for (int o : p.outputs)
    if (m(o) >= 0) q.outputs.push_back(m(o));
  return q;
}

// `p` without setup value `victim` (a leaf or a setup instruction's value).
Program drop_setup_value(const Program& p, int victim, int repl) {
  Program q = p;
  Remap m{victim, repl, {}};
  q.leaves.clear();
  q.setup.clear();
  for (size_t l = 0; l < p.leaves.size(); ++l) {
    if (static_cast<int>(l) == victim) {
      m.map.push_back(repl >= 0 ? m.map[repl] : -1);
    } else {
      m.map.push_back(static_cast<int>(q.leaves.size()));
      q.leaves.push_back(p.leaves[l]);
    }
  }
  remap_instrs(p.setup, static_cast<int>(p.leaves.size()), m, q.setup,
               static_cast<int>(q.leaves.size()));
  q.args.clear();
  for (int a : p.args) {
    if (m(a) < 0) return Program{};  // an argument would go: not this way
    q.args.push_back(m(a));
  }
  return q;
}

}  // namespace

Program shrink(const Program& start, const Config& config) {
  Program p = start;
  const std::string kind = kind_of(run_case(p, {config}).at(0).detail);
  std::vector<std::function<std::vector<Program>(const Program&)>> steps = {
      [](const Program& q) {  // an output
        std::vector<Program> c;
        for (size_t i = 0; i < q.outputs.size(); ++i) {
          Program n = q;
          n.outputs.erase(n.outputs.begin() + static_cast<long>(i));
          c.push_back(n);
        }
        return c;
      },
      [](const Program& q) {  // a body value: bypassed (its first operand instead), or dropped
        std::vector<Program> c;
        const int A = static_cast<int>(q.args.size());
        for (int i = static_cast<int>(q.body.size()) - 1; i >= 0; --i) {
          if (!q.body[i].in.empty()) c.push_back(drop_body_value(q, A + i, q.body[i].in[0]));
          c.push_back(drop_body_value(q, A + i, -1));
        }
        for (int a = 0; a < A; ++a)
          for (int r = 0; r < a; ++r) c.push_back(drop_body_value(q, a, r));
        for (int a = 0; a < A; ++a) c.push_back(drop_body_value(q, a, -1));
        return c;
      },
      [](const Program& q) {  // a no_grad flag
        std::vector<Program> c;
        for (size_t i = 0; i < q.body.size(); ++i)
          if (q.body[i].no_grad) {
            Program n = q;
            n.body[i].no_grad = false;
            c.push_back(n);
          }
        return c;
      },
      [](const Program& q) {  // a setup value, a leaf, a leaf's flags
        std::vector<Program> c;
        const int L = static_cast<int>(q.leaves.size());
        for (int i = static_cast<int>(q.setup.size()) - 1; i >= 0; --i)
          c.push_back(drop_setup_value(q, L + i, q.setup[i].in.at(0)));
        for (int l = 0; l < L; ++l) c.push_back(drop_setup_value(q, l, -1));
        for (int l = 0; l < L; ++l) {
          Program n = q;
          if (n.leaves[l].pregrad) {
            n.leaves[l].pregrad = false;
            c.push_back(n);
          }
          if (n.leaves[l].requires_grad) {
            n.leaves[l].requires_grad = false;
            c.push_back(n);
          }
        }
        return c;
      },
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& step : steps) {
      for (bool progress = true; progress;) {
        progress = false;
        for (const Program& candidate : step(p)) {
          if (fails(candidate, config, kind)) {
            p = candidate;
            progress = changed = true;
            break;
          }
        }
      }
    }
  }
  return p;
}

}  // namespace aotgrad::fuzz

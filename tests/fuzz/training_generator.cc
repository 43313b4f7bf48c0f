// aotgrad training fuzzer: the random program generator. It builds a program instruction by
// instruction, running each eagerly on the way (leaves made as the runner makes them, autograd
// on), and keeps an instruction only when eager runs it: a write into a leaf that requires grad,
// a write into an expanded or overlapping view, operands that do not broadcast are dropped there.
#include <ATen/ATen.h>

#include "training_fuzz.h"

namespace aotgrad::fuzz {
namespace {

// The four PyTorch bug shapes (tests/fuzz/README.md); a program may start from one.
const char* const kBugShapeTexts[] = {
    // pytorch#198095: a view of an aliased input regenerated from the wrong base. $0 and $1 are
    // overlapping views of one base (a synthetic base, since $0 is written); the output $4 is a
    // view of $1 and must be regenerated from $1's base and offset, not $0's or $2's.
    "leaf %0 [6] requires_grad\n"
    "leaf %1 [6] requires_grad\n"
    "%2 = mulc %0 2\n"
    "%3 = mulc %1 3\n"
    "%4 = slice %2 0 0 4 1\n"
    "%5 = slice %2 0 2 6 1\n"
    "args %4 %5 %3\n"
    "$3 = mulc_ $0 2\n"
    "$4 = slice $1 0 1 3 1\n"
    "$5 = mul $2 $2\n"
    "out $4 $3 $5\n",
    // pytorch#181146: aliased inputs to an autograd.Function drop gradient contributions. One
    // leaf comes in four times: twice as itself, twice as overlapping slices; its .grad (which
    // starts non-zero) must gather every contribution.
    "leaf %0 [5] requires_grad pregrad\n"
    "%1 = slice %0 0 0 4 1\n"
    "%2 = slice %0 0 1 5 1\n"
    "args %0 %0 %1 %2\n"
    "$4 = mul $0 $1\n"
    "$5 = sin $2\n"
    "$6 = mul $5 $3\n"
    "out $4 $6\n",
    // pytorch PR #190938: a row-shifted tangent from aliasing miswiring. Outputs alias each other
    // (a slice, a transpose and the base itself, the slice twice) and an input (a row of it);
    // each gets its own tangent, and one wired to another's slot shows up shifted by a row.
    "leaf %0 [4,3] requires_grad\n"
    "%1 = mulc %0 1.5\n"
    "args %1 %0\n"
    "$2 = mul $0 $1\n"
    "$3 = slice $2 0 1 4 1\n"
    "$4 = transpose $2 0 1\n"
    "$5 = select $0 0 1\n"
    "out $3 $2 $4 $5 $3\n",
    // pytorch#136662: compile(grad(f)) wrong because of re-inplacing. An intermediate is written
    // through a view after another op read it; its old value is read again (by the backward of
    // tanh and of mul), so a re-inplaced kernel must not overwrite what is still read.
    "leaf %0 [4,4] requires_grad pregrad\n"
    "args %0\n"
    "$1 = sin $0\n"
    "$2 = clone $1\n"
    "$3 = tanh $2\n"
    "$4 = select $2 0 1\n"
    "$5 = mulc_ $4 3\n"
    "$6 = mul $2 $1\n"
    "$7 = add $6 $3\n"
    "out $7 $2\n",
};

bool try_apply(const Instr& ins, std::vector<at::Tensor>& table) {
  try {
    apply(ins, table);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

int pick(Rng& r, size_t n) { return static_cast<int>(r.between(0, static_cast<int64_t>(n) - 1)); }

// A random view of `t` (value `v`), or an empty op when none fits.
Instr random_view(Rng& r, const at::Tensor& t, int v) {
  const int64_t dim = t.dim();
  Instr ins{"", {v}, {}, false};
  const int kind = static_cast<int>(r.between(0, 8));
  if (dim == 0 && kind != 2 && kind != 4 && kind != 8) return ins;
  const int64_t d = r.between(0, dim - 1), n = dim ? t.size(d) : 1;
  auto D = [](int64_t x) { return static_cast<double>(x); };
  switch (kind) {
    case 0: {
      int64_t s = r.between(0, n - 1), e = r.between(s + 1, n);
      ins = {"slice", {v}, {D(d), D(s), D(e), D(r.chance(0.2) ? 2 : 1)}, false};
      break;
    }
    case 1: ins = {"select", {v}, {D(d), D(r.between(0, n - 1))}, false}; break;
    case 2: {  // flatten, or split a dimension of even size
      ins = {"view", {v}, {}, false};
      if (dim > 0 && n % 2 == 0 && r.chance(0.5)) {
        for (int64_t k = 0; k < dim; ++k) {
          if (k == d)
            ins.params.insert(ins.params.end(), {2.0, D(n / 2)});
          else
            ins.params.push_back(D(t.size(k)));
        }
      } else {
        ins.params = {D(t.numel())};
      }
      break;
    }
    case 3:
      if (dim < 2) return ins;
      ins = {"transpose", {v}, {D(d), D((d + r.between(1, dim - 1)) % dim)}, false};
      break;
    case 4: {  // a window over the storage, overlapping when a stride is 0 or below a size
      const int64_t storage = static_cast<int64_t>(t.storage().nbytes() / t.element_size());
      const int64_t nd = r.between(1, 2);
      ins = {"as_strided", {v}, {D(nd)}, false};
      std::vector<int64_t> sizes, strides;
      for (int64_t k = 0; k < nd; ++k) sizes.push_back(r.between(1, 3));
      for (int64_t k = 0; k < nd; ++k) strides.push_back(r.between(0, 3));
      for (int64_t s : sizes) ins.params.push_back(D(s));
      for (int64_t s : strides) ins.params.push_back(D(s));
      ins.params.push_back(D(r.between(0, std::max<int64_t>(0, storage - 1))));
      break;
    }
    case 5: ins = {"unbind", {v}, {D(d), D(r.between(0, n - 1))}, false}; break;
    case 6: {
      int64_t size = r.between(1, n);
      ins = {"split", {v}, {D(size), D(d), D(r.between(0, (n + size - 1) / size - 1))}, false};
      break;
    }
    case 7:
      if (dim < 2) return ins;
      ins = {"diagonal", {v}, {D(r.between(-1, 1)), 0.0, 1.0}, false};
      break;
    default: {  // a new leading dimension of 2, or a size-1 dimension widened
      ins = {"expand", {v}, {2.0}, false};
      for (int64_t k = 0; k < dim; ++k) ins.params.push_back(D(t.size(k)));
      break;
    }
  }
  return ins;
}

// A random body instruction over `table` (whose first `num_args` values are the arguments).
Instr random_instr(Rng& r, const std::vector<at::Tensor>& table, size_t num_args) {
  const int a = pick(r, table.size()), b = pick(r, table.size());
  // Writes go to the arguments and their views more often than to new values.
  const int target = r.chance(0.5) ? pick(r, num_args) : a;
  const int roll = static_cast<int>(r.between(0, 99));
  const double c = static_cast<double>(r.between(-3, 3)) / 2 + (r.chance(0.5) ? 0.25 : 0);
  Instr ins;
  if (roll < 30)
    ins = random_view(r, table[a], a);
  else if (roll < 36)
    ins = {"detach", {a}, {}, false};
  else if (roll < 41)
    ins = {"dropout", {a}, {0.5}, false};
  else if (roll < 50)
    ins = {r.chance(0.5) ? "add" : (r.chance(0.5) ? "mul" : "sub"), {a, b}, {}, false};
  else if (roll < 64) {
    const char* unary[] = {"sin", "tanh", "mulc", "clone", "sum", "sumdim"};
    ins = {unary[r.between(0, 5)], {a}, {}, false};
    if (ins.op == "mulc") ins.params = {c};
    if (ins.op == "sumdim")
      ins.params = {static_cast<double>(r.between(0, std::max<int64_t>(0, table[a].dim() - 1)))};
  } else {
    const char* writes[] = {"add_", "mul_", "mulc_", "sin_", "copy_"};
    ins = {writes[r.between(0, 4)], {target}, {}, false};
    if (ins.op == "add_" || ins.op == "mul_" || ins.op == "copy_") ins.in.push_back(b);
    if (ins.op == "mulc_") ins.params = {c};
  }
  ins.no_grad = r.chance(0.15);
  return ins;
}

}  // namespace

std::vector<std::string> bug_shapes() {
  return {"pytorch_198095", "pytorch_181146", "pytorch_pr190938", "pytorch_136662"};
}

Program bug_shape(const std::string& name) {
  const auto names = bug_shapes();
  for (size_t k = 0; k < names.size(); ++k)
    if (names[k] == name) return parse_program(kBugShapeTexts[k]);
  throw std::runtime_error("unknown bug shape '" + name + "'");
}

Program generate(uint64_t seed) {
  Rng r(seed * 0x9E3779B97F4A7C15ULL + 1);
  Program p;
  std::vector<at::Tensor> setup, body;
  if (r.chance(0.1)) {
    // Start from a bug shape, dropping its outputs; the random body goes on from there.
    p = bug_shape(bug_shapes()[r.between(0, 3)]);
    p.outputs.clear();
    setup = make_setup(p);
    for (int a : p.args) body.push_back(setup[a]);
    for (const Instr& ins : p.body) apply(ins, body);
  } else {
    const int64_t num_leaves = r.between(1, 3);
    for (int64_t i = 0; i < num_leaves; ++i) {
      Leaf l;
      const int64_t rank = r.between(1, 3);
      for (int64_t d = 0; d < rank; ++d)
        l.shape.push_back(r.between(1, 4) + (r.chance(0.7) ? 1 : 0));
      l.requires_grad = r.chance(0.7);
      l.pregrad = l.requires_grad && r.chance(0.3);
      p.leaves.push_back(l);
      setup.push_back(make_leaf(l, static_cast<size_t>(i)));
    }
    // Non-leaf bases (which may be written through their views) and views.
    const int64_t num_setup = r.between(0, 4);
    for (int64_t k = 0; k < num_setup; ++k) {
      const int v = pick(r, setup.size());
      Instr ins = r.chance(0.4) ? Instr{"mulc", {v}, {2.0}, false} : random_view(r, setup[v], v);
      if (!ins.op.empty() && try_apply(ins, setup)) p.setup.push_back(ins);
    }
    const int64_t num_args = r.between(1, 3);
    for (int64_t k = 0; k < num_args; ++k) {
      // Mostly distinct values; sometimes one twice (a duplicated input).
      int v = (!p.args.empty() && r.chance(0.15)) ? p.args[pick(r, p.args.size())]
                                                  : pick(r, setup.size());
      p.args.push_back(v);
      body.push_back(setup[v]);
    }
  }
  const int64_t num_body = r.between(1, 8);
  for (int64_t k = 0; k < num_body; ++k) {
    for (int attempt = 0; attempt < 20; ++attempt) {
      Instr ins = random_instr(r, body, p.args.size());
      if (!ins.op.empty() && try_apply(ins, body)) {
        p.body.push_back(ins);
        break;
      }
    }
  }
  const int64_t num_outputs = r.between(1, 3);
  for (int64_t k = 0; k < num_outputs; ++k) {
    // Mostly values the body made; sometimes an argument itself (an output aliasing an input).
    p.outputs.push_back(r.chance(0.2) ? pick(r, p.args.size())
                                      : pick(r, body.size() - p.args.size()) +
                                            static_cast<int>(p.args.size()));
    if (p.body.empty()) p.outputs.back() = pick(r, p.args.size());
  }
  return p;
}

}  // namespace aotgrad::fuzz

// aotgrad training fuzzer: a random program over views, in-place ops, aliased inputs, no_grad
// regions, detach and random ops, run eagerly and through aot_function in training, compared
// (tests/fuzz/README.md, "Differential fuzzing of the training path").
//
// A program is data. Its leaves (%0, %1, ...) are float64 tensors made fresh for every run, each
// with requires_grad and a pre-existing .grad as the program says; its setup instructions
// (%L, ...) make non-leaf bases and views of them outside the function; its arguments are setup
// values (the same one twice: duplicated inputs; views of one base: aliased inputs); its body
// instructions ($A, ... after the arguments $0 .. $A-1) are the function aot_function captures;
// its outputs are body values. One instruction makes one value; an in-place op's value is the
// tensor it wrote.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace aotgrad::fuzz {

struct Leaf {
  std::vector<int64_t> shape;
  bool requires_grad = false;
  bool pregrad = false;  // starts with a .grad (accumulation is checked)
};

struct Instr {
  std::string op;
  std::vector<int> in;         // tensor operands: value numbers
  std::vector<double> params;  // the op's other arguments (dims, indices, sizes, scalars)
  bool no_grad = false;        // runs under at::NoGradGuard (a torch.no_grad region)
};

struct Program {
  std::vector<Leaf> leaves;
  std::vector<Instr> setup;  // values leaves.size() + i
  std::vector<int> args;     // setup values
  std::vector<Instr> body;   // values args.size() + i
  std::vector<int> outputs;  // body values
};

/// The text form, one line per leaf, instruction, the argument list and the outputs:
///   leaf %0 [4,3] requires_grad pregrad
///   %1 = mulc %0 2
///   %2 = slice %1 0 0 3 1
///   args %2 %2 %0
///   $3 = nograd mul_ $0 $2
///   out $3 $0
/// `#` starts a comment. parse_program throws std::runtime_error naming the line.
std::string print_program(const Program& p);
Program parse_program(const std::string& text);

/// Runs one instruction on `table` (a value per number), appending its value. Throws what ATen
/// throws for operands the op cannot take.
void apply(const Instr& ins, std::vector<at::Tensor>& table);
/// Whether `op` is known; whether it writes its first operand; whether it is a view (of the
/// views the issue lists; detach is not counted).
bool known_op(const std::string& op);
bool writes_first(const std::string& op);
bool is_view(const std::string& op);

/// Leaf `index` of a program: float64 values fixed by its index (and its .grad's, when pregrad),
/// requires_grad as the program says. make_setup: the leaves then the setup values.
at::Tensor make_leaf(const Leaf& l, size_t index);
std::vector<at::Tensor> make_setup(const Program& p);

/// The four PyTorch bug shapes by name (pytorch_198095, ...), as programs.
std::vector<std::string> bug_shapes();
Program bug_shape(const std::string& name);

/// The function the program's body is: run eagerly, or captured by aot_function.
std::vector<at::Tensor> run_body(const Program& p, const std::vector<at::Tensor>& args);

/// A random program, valid eagerly as far as the forward goes (the generator runs each
/// instruction eagerly on the way and keeps only those that run).
Program generate(uint64_t seed);

/// One aot_function configuration: activation memory budget, memory schedule, re-inplacing.
struct Config {
  double budget = 1.0;
  bool schedule = true;
  bool reinplace = true;
};
std::string config_name(const Config& c);
/// Every configuration: budgets 1, 0.5, 0 x schedule on/off x re-inplacing on/off.
std::vector<Config> all_configs();

/// What one case came to for one configuration.
enum class Verdict { kMatch, kRaised, kMismatch, kEagerInvalid };
struct ConfigResult {
  Config config;
  Verdict verdict = Verdict::kMatch;
  bool bitwise = false;  // kMatch: every compared tensor equal bit for bit
  std::string category;  // kRaised: the construct the error names
  std::string detail;    // kMismatch: what differs; kRaised: the message
  std::string known;     // kMismatch: the known issue it is put down to, if any
};

/// A known aotgrad bug the fuzzer finds, not yet fixed: a mismatch that `matches` is counted
/// under its name and fails only with --strict. Each has a minimal regression in
/// tests/fuzz/training_regressions/ (expected to fail until the bug is fixed).
struct KnownIssue {
  std::string name, description;
  bool (*matches)(const Program& p, const std::string& detail);
};
const std::vector<KnownIssue>& known_issues();

/// Runs `p` eagerly, then through aot_function with each of `configs`, and compares (outputs,
/// output aliasing and requires_grad, leaf grads after accumulation, final values of leaves and
/// setup values, version-counter advances). A case whose eager run throws is kEagerInvalid for
/// every configuration.
std::vector<ConfigResult> run_case(const Program& p, const std::vector<Config>& configs);

/// Delta debugging: a smaller program that still fails (kMismatch) under `config` with a mismatch
/// of the same kind (the same description, numbers aside).
Program shrink(const Program& p, const Config& config);

/// The tolerance of non-bitwise comparisons (float64): |a - b| <= kAtol + kRtol * |b|.
constexpr double kAtol = 1e-9;
constexpr double kRtol = 1e-9;

/// A small deterministic generator (the fuzzer's, not libtorch's).
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  int64_t between(int64_t lo, int64_t hi) {  // inclusive; lo when the range is empty
    if (hi <= lo) return lo;
    return lo + static_cast<int64_t>(gen_() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return static_cast<double>(gen_() % 1000000) < p * 1e6; }

 private:
  std::mt19937_64 gen_;
};

}  // namespace aotgrad::fuzz

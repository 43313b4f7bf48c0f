// aotgrad: a seeded mutation fuzzer over the graphs in tests/data -- parse + verify must end in a
// graph or an aotgrad::Error whose message is printable ASCII, never a crash or another exception;
// graphs that survive must print as a fixed point.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/quote.h"

namespace aotgrad {
namespace {

namespace fs = std::filesystem;

// splitmix64: a tiny, fully specified generator, so seeds reproduce on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }

 private:
  uint64_t s_;
};

// Fragments that reach deep parser states when spliced into a graph.
const char* const kTokens[] = {
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    ":",
    ";",
    "-",
    ".",
    "\n",
    "\\\n",
    "#",
    "'",
    "\"",
    " = None",
    "None",
    "True",
    "inf",
    "-inf",
    "nan",
    "1e999",
    "2.",
    "99999999999999999999",
    "-0",
    "0",
    "torch.ops.aten.add.Tensor(",
    "torch.ops.aten.mul.Tensor",
    "aten.relu",
    "operator.getitem(",
    "[0]",
    "[-1]",
    "[99]",
    "\"f32[4]\"",
    "\"Sym(s0)\"",
    "\"i64[][]cpu\"",
    "\"f32[s0*s0, 2]\"",
    "\"f99[1]\"",
    "\"f32[((((((((s0))))))))]\"",
    "alpha = ",
    "torch.float32",
    "torch.strided",
    "device(type='cuda', index=0)",
    "torch.device('cpu')",
    "return ",
    "return (",
    "def forward(",
    "class X:",
    "fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)",
    "pytree.tree_unflatten(",
    "[[[[[[[[[[[[[[[[",
    "((((((((",
    "\xff\xfe",
    "\t",
    "\r\n",
    "output",
    "getitem",
    "primals_1",
    "tangents_1",
    "arg0_1",
    "x",
    "s0",
    "\"f32[9223372036854775807, 2]\"",
    "\"f32[-1]\"",
    "\"f32[4][0]cpu\"",
    "\"Sym(s0 > 2)\"",
};

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (auto& l : lines) out += l + "\n";
  return out;
}

// Applies one random mutation.
void mutate(std::string& s, Rng& rng) {
  size_t n = s.size();
  switch (rng.below(9)) {
    case 0:  // flip a byte
      if (n) s[rng.below(n)] ^= static_cast<char>(1u << rng.below(8));
      return;
    case 1: {  // delete a range
      if (!n) return;
      size_t at = rng.below(n);
      s.erase(at, 1 + rng.below(std::min<size_t>(n - at, 40)));
      return;
    }
    case 2:  // truncate
      s.resize(rng.below(n + 1));
      return;
    case 3:
    case 4: {  // swap or duplicate lines
      auto lines = split_lines(s);
      if (lines.size() < 2) return;
      size_t a = rng.below(lines.size()), b = rng.below(lines.size());
      if (rng.below(2))
        std::swap(lines[a], lines[b]);
      else
        lines.insert(lines.begin() + a, lines[b]);
      s = join_lines(lines);
      return;
    }
    case 5: {  // random garbage bytes
      std::string junk;
      for (size_t k = 1 + rng.below(8); k > 0; --k) junk += static_cast<char>(rng.below(256));
      s.insert(rng.below(n + 1), junk);
      return;
    }
    case 6:
    case 7: {  // splice in a token
      const char* t = kTokens[rng.below(std::size(kTokens))];
      s.insert(rng.below(n + 1), t);
      return;
    }
    case 8: {  // replace one identifier-ish word with another seen in the text (type confusion)
      auto word_at = [&](size_t p) {
        while (p < s.size() && !std::isalpha(static_cast<unsigned char>(s[p]))) ++p;
        size_t e = p;
        while (e < s.size() && (std::isalnum(static_cast<unsigned char>(s[e])) || s[e] == '_')) ++e;
        return std::make_pair(p, e);
      };
      if (!n) return;
      auto [p1, e1] = word_at(rng.below(n));
      auto [p2, e2] = word_at(rng.below(n));
      if (p1 >= s.size() || p2 >= s.size()) return;
      std::string w = s.substr(p2, e2 - p2);
      s.replace(p1, e1 - p1, w);
      return;
    }
  }
}

std::vector<std::string> seed_texts() {
  std::vector<std::string> out;
  fs::path root(AOTGRAD_TEST_DATA);
  std::vector<fs::path> files;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file() && e.path().extension() == ".fx") files.push_back(e.path());
  std::sort(files.begin(), files.end());  // deterministic order
  for (auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out.push_back(ss.str());
  }
  return out;
}

// Parses and verifies; on success also checks that printing is a fixed point. Returns whether it
// parsed and verified.
bool run_one(const std::string& text, const std::string& what) {
  try {
    auto g = parse_graph(text, aten_ops());
    verify(*g);
    std::string once = print_graph(*g);
    std::string twice = print_graph(*parse_graph(once, aten_ops()));
    EXPECT_EQ(twice, once) << what;
    return true;
  } catch (const Error& e) {
    if (e.message().empty()) ADD_FAILURE() << what << ": an Error without a message";
    // Bytes quoted from the text are escaped: the message is printable ASCII, valid UTF-8.
    for (char c : e.message())
      if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) >= 127) {
        ADD_FAILURE() << what
                      << ": the message quotes bytes unescaped: " << escape_bytes(e.message());
        break;
      }
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": non-aotgrad exception " << e.what() << "\n--- input ---\n"
                  << text.substr(0, 4000);
    return false;
  }
}

TEST(Fuzz, MutatedGraphsParseOrFailCleanly) {
  auto seeds = seed_texts();
  ASSERT_FALSE(seeds.empty());
  // AOTGRAD_FUZZ_MUTANTS raises the count for a longer local run.
  const char* env = std::getenv("AOTGRAD_FUZZ_MUTANTS");
  const int kMutants = env ? std::max(1, std::atoi(env)) : 4000;
  int ok = 0;
  for (int i = 0; i < kMutants; ++i) {
    Rng rng(0xa07'9fadull * 1000003 + static_cast<uint64_t>(i));
    std::string text = seeds[rng.below(seeds.size())];
    for (size_t k = 1 + rng.below(3); k > 0; --k) mutate(text, rng);
    if (run_one(text, "mutant " + std::to_string(i))) ++ok;
    if (::testing::Test::HasFailure()) break;  // one reproducer is enough
  }
  // Some mutants (comment edits, equivalent spellings) still parse; most do not.
  EXPECT_GT(ok, 0);
  EXPECT_LT(ok, kMutants);
  std::printf("%d of %d mutants parsed and verified\n", ok, kMutants);
}

TEST(Fuzz, HostileInputs) {
  std::vector<std::string> inputs = {
      std::string(200000, '('),
      "def forward(self, x: \"f32[4]\"):\n    return " + std::string(100000, '[') + "\n",
      "def forward(self, x: \"f32[" + std::string(100000, '(') + "]\"):\n    return x\n",
      "def forward(self, x: \"f32[" + std::string(50000, '-') + "1]\"):\n    return x\n",
      "def forward(self, x: \"f32[99999999999, 99999999999]\"):\n    return x\n",
      "def forward(self, x: \"f32[4611686018427387904, 4]\"):\n    return x\n",
      "def forward(self, x: \"f32[3037000500, 3037000500, 3037000500]\"):\n"
      "    y = torch.ops.aten.relu.default(x)\n    return y\n",
      "def forward(self, x: \"f32[4]\"):\n    return (x" + std::string(100000, ',') + ")\n",
      std::string("\0\0\0def", 6),
      "def forward(self, x: \"f32[4]\"):\n    y = torch.ops.aten.mul.Scalar(x, " +
          std::string(400, '9') + ".5)\n    return y\n",
      "def forward(self, x: \"f32[4]\"):\n    y = torch.ops.aten.mul.Scalar(x, 1e" +
          std::string(400, '9') + ")\n    return y\n",
  };
  std::string binary;
  Rng rng(7);
  for (int i = 0; i < 100000; ++i) binary += static_cast<char>(rng.below(256));
  inputs.push_back(binary);
  for (size_t i = 0; i < inputs.size(); ++i)
    run_one(inputs[i], "hostile input " + std::to_string(i));
}

}  // namespace
}  // namespace aotgrad

// Tests for the compile cache's entry text: round trips of training and inference compilations,
// random-op recomputation, and parse errors that say what is wrong.
#include "aotgrad/driver/cache_entry.h"

#include <gtest/gtest.h>

#include "aotgrad/ir/error.h"
#include "aotgrad/support/quote.h"
#include "aotgrad/support/sha256.h"
#include "cache_test_util.h"

namespace aotgrad {
namespace {

using namespace cache_test;

// An entry without its last line, the signature ("sha256 <64 hex digits>\n").
std::string unsigned_body(const std::string& entry) {
  return entry.substr(0, entry.rfind("sha256 "));
}
// `body` signed again, so that the reader gets past the checksum to what was changed.
std::string resigned(const std::string& body) { return body + "sha256 " + sha256_hex(body) + "\n"; }

// The compilation of `g` by the standard pipeline of `kind`, without a cache.
CompileState compiled(CompileKind kind, const Graph& g, const std::vector<bool>& rg = {}) {
  CompileState s = begin_compilation(kind, g, rg);
  PassPipeline p = kind == CompileKind::kTraining ? training_pipeline(cached_in(""))
                                                  : inference_pipeline(cached_in(""));
  p.run(s);
  return s;
}

CompileState parsed(const std::string& text, const std::string& key, CompileKind kind) {
  CompileState s;
  s.kind = kind;
  parse_cache_entry(text, key, s);
  return s;
}

void expect_same(const CompileState& a, const CompileState& b) {
  auto same_graph = [](const std::unique_ptr<Graph>& x, const std::unique_ptr<Graph>& y) {
    ASSERT_EQ(x == nullptr, y == nullptr);
    if (x) EXPECT_EQ(print_graph(*x), print_graph(*y));
  };
  same_graph(a.fw, b.fw);
  same_graph(a.bw, b.bw);
  EXPECT_EQ(print_graph(*a.input_views), print_graph(*b.input_views));
  EXPECT_EQ(a.saved, b.saved);
  EXPECT_EQ(a.num_forward_outputs, b.num_forward_outputs);
  EXPECT_EQ(a.joint.tangent_of_output, b.joint.tangent_of_output);
  EXPECT_EQ(a.joint.primal_requires_grad, b.joint.primal_requires_grad);
  EXPECT_EQ(a.joint.leaf_output, b.joint.leaf_output);
  EXPECT_EQ(a.meta.mutated_inputs_returned, b.meta.mutated_inputs_returned);
  EXPECT_EQ(a.meta.num_tokens, b.meta.num_tokens);
  EXPECT_EQ(a.joint.num_tokens, b.joint.num_tokens);
  ASSERT_EQ(a.meta.inputs.size(), b.meta.inputs.size());
  for (size_t i = 0; i < a.meta.inputs.size(); ++i) {
    EXPECT_EQ(a.meta.inputs[i].mutates_data, b.meta.inputs[i].mutates_data) << i;
    EXPECT_EQ(a.meta.inputs[i].view, b.meta.inputs[i].view) << i;
  }
}

TEST(CacheEntry, TrainingEntryRoundTripsThroughText) {
  CompileState a = compiled(CompileKind::kTraining, *graph(), kGrad);
  std::string text = serialize_cache_entry("k", kVersion, a);
  EXPECT_EQ(text.rfind("aotgrad-compile-cache 5 training k\naotgrad test-version\n", 0), 0u);
  EXPECT_NE(text.find("\ngraph fw "), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 72, 7), "sha256 ");
  CompileState b = parsed(text, "k", CompileKind::kTraining);
  expect_same(a, b);
  EXPECT_EQ(b.graph, nullptr);  // an entry holds no joint graph
  EXPECT_EQ(serialize_cache_entry("k", kVersion, b), text);
}

TEST(CacheEntry, InferenceEntryRoundTrips) {
  CompileState a = compiled(CompileKind::kInference, *graph());
  std::string text = serialize_cache_entry("key1", kVersion, a);
  CompileState b = parsed(text, "key1", CompileKind::kInference);
  EXPECT_EQ(print_graph(*a.graph), print_graph(*b.graph));
  EXPECT_EQ(print_graph(*a.input_views), print_graph(*b.input_views));
  EXPECT_EQ(b.meta.mutated_inputs_returned, std::vector<int>{3});
  EXPECT_EQ(serialize_cache_entry("key1", kVersion, b), text);
  // A training entry is not an inference entry, nor the other way round.
  std::string train =
      serialize_cache_entry("key1", kVersion, compiled(CompileKind::kTraining, *graph(), kGrad));
  EXPECT_THROW(parsed(train, "key1", CompileKind::kInference), Error);
  EXPECT_THROW(parsed(text, "key1", CompileKind::kTraining), Error);
  // Exports are never cached.
  CompileState e;
  e.kind = CompileKind::kExport;
  EXPECT_THROW(serialize_cache_entry("k", kVersion, e), Error);
}

TEST(CacheEntry, ParseErrorsSayWhatIsWrong) {
  CompileState a = compiled(CompileKind::kTraining, *graph(), kGrad);
  std::string good = serialize_cache_entry("k", kVersion, a);
  auto message = [](const std::string& text) {
    try {
      parsed(text, "k", CompileKind::kTraining);
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_NE(message(good.substr(0, good.size() / 2)).find("truncated"), std::string::npos);
  EXPECT_NE(message("garbage\n").find("not a compile cache entry"), std::string::npos);
  EXPECT_NE(message(serialize_cache_entry("other", kVersion, a)).find("written for key other"),
            std::string::npos);
  // A body edited and re-signed: the reader names the line.
  std::string body = unsigned_body(good);
  std::string bad_count = body;
  bad_count.replace(bad_count.find("\nsaved "), 8, "\nsaved 9");
  EXPECT_NE(message(resigned(bad_count)).find("'saved' count does not match"), std::string::npos)
      << message(resigned(bad_count));
  std::string bad_graph = body;
  bad_graph.replace(bad_graph.find("torch.ops.aten.relu.default"), 27,
                    "torch.ops.aten.reluX.default");
  std::string m = message(resigned(bad_graph));
  EXPECT_NE(m.find("graph 'fw'"), std::string::npos) << m;
  EXPECT_NE(m.find("reluX"), std::string::npos) << m;
  EXPECT_EQ(m.rfind("line ", 0), 0u) << m;
  EXPECT_EQ(message(resigned(body + "extra\n")).find("line "), 0u);
}

// Found by tests/fuzz/cache_entry_fuzz: a re-signed entry whose metadata names an input or a view
// that does not exist was read, and `aotgrad run` then indexed past the inputs or the input views
// graph's outputs (a segfault). The reader now rejects it.
TEST(CacheEntry, IndicesOutOfRangeAreRejected) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 4]", y: "f32[4]"):
    view = torch.ops.aten.view.default(x, [16])
    add_ = torch.ops.aten.add_.Tensor(y, 1)
    t_ = torch.ops.aten.t_.default(x)
    mul = torch.ops.aten.mul.Tensor(t_, 2)
    return (view, add_, mul)
)",
                       aten_ops());
  std::string good = serialize_cache_entry("k", kVersion, compiled(CompileKind::kInference, *g));
  std::string body = unsigned_body(good);
  auto message = [&](const std::string& from, const std::string& to) {
    std::string b = body;
    size_t at = b.find(from);
    if (at == std::string::npos) return "'" + from + "' is not in the entry:\n" + body;
    b.replace(at, from.size(), to);
    try {
      parsed(resigned(b), "k", CompileKind::kInference);
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("input 0 1 0 0 0 0\n", "input 0 1 0 0 1 0\n"),
            "input 0 names view 1; the input views graph returns 1");
  EXPECT_EQ(message("input 0 1 0 0 0 0\n", "input 0 1 0 0 -2 0\n"),
            "line 4: input view -2 is not an index");
  EXPECT_EQ(message("output alias_of_input 0 -1 0\n", "output alias_of_input 0 100000000 0\n"),
            "output 0 names view 100000000; the input views graph returns 1");
  EXPECT_EQ(message("output alias_of_input 0 -1 0\n", "output alias_of_input -1 -1 0\n"),
            "line 7: output alias_of_input names no input");
  EXPECT_EQ(message("output is_input 1 -1 0\n", "output is_input -7 -1 0\n"),
            "line 8: output names no input");
  EXPECT_EQ(message("output fresh -1 -1 0\n", "output fresh -1 -5 0\n"),
            "line 9: output view -5 is not an index");
  EXPECT_EQ(message("output fresh -1 -1 0\n", "output fresh -1 -1 2\n"),
            "line 9: output flag '2' is not 0 or 1");
  // One input fewer in the metadata than the input views graph takes.
  EXPECT_EQ(message("inputs 2\ninput 0 1 0 0 0 0\ninput 1 0 0 0 -1 0\noutputs 3\n"
                    "output alias_of_input 0 -1 0\noutput is_input 1 -1 0\n"
                    "output fresh -1 -1 0\nmutated_inputs_returned 2 0 1\n",
                    "inputs 1\ninput 0 1 0 0 0 0\noutputs 3\noutput alias_of_input 0 -1 0\n"
                    "output fresh -1 -1 0\noutput fresh -1 -1 0\nmutated_inputs_returned 1 0\n"),
            "the metadata describes 1 inputs, the input views graph takes 2");
}

// Bytes of a corrupt entry that are not printable ASCII are escaped in the message: every
// corruption below gives printable ASCII.
TEST(CacheEntry, CorruptEntriesGiveTextMessages) {
  CompileState a = compiled(CompileKind::kTraining, *graph(), kGrad);
  std::string good = serialize_cache_entry("k", kVersion, a);
  std::string body = unsigned_body(good);
  std::vector<std::string> bad = {
      "aotgrad-compile-cache \xff\xfe training k\n",
      "aotgrad-compile-cache 5 \xc3\xa9 k\n" + good.substr(good.find('\n') + 1),
      resigned(body.substr(0, body.find("\ninputs")) + "\ninputs \x80\x81" +
               body.substr(body.find("\ninputs") + 9)),
      resigned(body.substr(0, body.find("\ninput ") + 7) + "\xe2 " +
               body.substr(body.find("\ninput ") + 9)),
      resigned(body + "\x01\x02\xff\n"),
      resigned(body.substr(0, body.find("\noutputs")) + "\n\xf0\x9f\x98" +
               body.substr(body.find("\noutputs"))),
  };
  std::string k;
  for (int i = 0; i < 40; ++i) {  // high bytes in random places, re-signed
    std::string b = body;
    b[(static_cast<size_t>(i) * 2654435761u) % b.size()] = static_cast<char>(0x80 + i);
    bad.push_back(resigned(b));
  }
  for (size_t i = 0; i < bad.size(); ++i) {
    try {
      parsed(bad[i], "k", CompileKind::kTraining);
    } catch (const Error& e) {
      for (char c : e.message())
        if (static_cast<unsigned char>(c) < 32 || static_cast<unsigned char>(c) >= 127) {
          ADD_FAILURE() << i << ": " << escape_bytes(e.message());
          break;
        }
    }
  }
}

// A recomputed random op: the entry carries run_and_save_rng_state / run_with_rng_state and the
// rng state placeholder, and parses back to the same graphs.
TEST(CacheEntry, RngRecomputationRoundTrips) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4, 8]"):
    sin = torch.ops.aten.sin.default(x)
    native_dropout = torch.ops.aten.native_dropout.default(sin, 0.5, True)
    getitem = native_dropout[0]
    cos = torch.ops.aten.cos.default(getitem)
    sum_1 = torch.ops.aten.sum.default(cos)
    return (sum_1,)
)",
                       aten_ops());
  g->find("native_dropout")->info().recompute = RecomputePolicy::MustRecompute;
  CompileState a = compiled(CompileKind::kTraining, *g, {true});
  std::string text = serialize_cache_entry("k", kVersion, a);
  ASSERT_NE(text.find("run_with_rng_state"), std::string::npos);
  expect_same(a, parsed(text, "k", CompileKind::kTraining));
}

// Effect tokens (Note [Effect tokens]): the entry keeps the token count, for inference and
// training; an entry whose count does not fit its graph is rejected.
TEST(CacheEntry, EffectTokensRoundTrip) {
  auto g = parse_graph(R"(
def forward(self, x: "f32[4]"):
    _print = torch.ops.aten._print.default('moo')
    sin = torch.ops.aten.sin.default(x)
    return (sin,)
)",
                       aten_ops());
  for (CompileKind kind : {CompileKind::kInference, CompileKind::kTraining}) {
    CompileState a = compiled(
        kind, *g, kind == CompileKind::kTraining ? std::vector<bool>{true} : std::vector<bool>{});
    ASSERT_EQ(a.meta.num_tokens, 1);
    std::string text = serialize_cache_entry("k", kVersion, a);
    ASSERT_NE(text.find("\ntokens 1\n"), std::string::npos);
    CompileState b = parsed(text, "k", kind);
    expect_same(a, b);
    if (kind == CompileKind::kInference) EXPECT_EQ(print_graph(*a.graph), print_graph(*b.graph));
  }
  CompileState a = compiled(CompileKind::kInference, *g);
  std::string text = serialize_cache_entry("k", kVersion, a);
  std::string body = unsigned_body(text);
  body.replace(body.find("\ntokens 1\n"), 10, "\ntokens 0\n");
  std::string bad = resigned(body);
  try {
    parsed(bad, "k", CompileKind::kInference);
    ADD_FAILURE() << "a wrong token count was accepted";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("the graph returns 2 values, the metadata describes 1"),
              std::string::npos)
        << e.message();
  }
}

}  // namespace
}  // namespace aotgrad

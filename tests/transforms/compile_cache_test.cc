// Tests for the on-disk compile cache: SHA-256, keys, the entry text format, recovery from bad
// entries, concurrent writers, the default directory and the cache log.
#include "aotgrad/transforms/compile_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/logging.h"

namespace aotgrad {
namespace {

namespace fs = std::filesystem;

constexpr const char* kVersion = "test-version";

// A fresh directory under the system's temporary directory, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "aotgrad-cache-test-XXXXXX").string();
    char* made = ::mkdtemp(tmpl.data());
    if (!made) throw std::runtime_error("mkdtemp failed");
    path = made;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// §13.20's linear + relu, with a BatchNorm-like buffer update so the entry has a mutated input.
const char* kGraph = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]", counter: "i64[]"):
    add_ = torch.ops.aten.add_.Tensor(counter, 1)
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.relu.default(addmm)
    sum_1 = torch.ops.aten.sum.default(relu)
    return (sum_1, relu)
)";
const std::vector<bool> kGrad = {false, true, true, false};

std::shared_ptr<Graph> graph() { return parse_graph(kGraph, aten_ops()); }

void expect_same_artifacts(const TrainingArtifacts& a, const TrainingArtifacts& b) {
  EXPECT_EQ(print_graph(*a.fw), print_graph(*b.fw));
  EXPECT_EQ(print_graph(*a.bw), print_graph(*b.bw));
  EXPECT_EQ(print_graph(*a.input_views), print_graph(*b.input_views));
  EXPECT_EQ(a.saved, b.saved);
  EXPECT_EQ(a.num_forward_outputs, b.num_forward_outputs);
  EXPECT_EQ(a.joint_info.tangent_of_output, b.joint_info.tangent_of_output);
  EXPECT_EQ(a.joint_info.primal_requires_grad, b.joint_info.primal_requires_grad);
  EXPECT_EQ(a.joint_info.num_primals, b.joint_info.num_primals);
  EXPECT_EQ(a.joint_info.num_tangents, b.joint_info.num_tangents);
  EXPECT_EQ(a.meta.mutated_inputs_returned, b.meta.mutated_inputs_returned);
  ASSERT_EQ(a.meta.inputs.size(), b.meta.inputs.size());
  for (size_t i = 0; i < a.meta.inputs.size(); ++i) {
    EXPECT_EQ(a.meta.inputs[i].mutates_data, b.meta.inputs[i].mutates_data) << i;
    EXPECT_EQ(a.meta.inputs[i].requires_grad, b.meta.inputs[i].requires_grad) << i;
    EXPECT_EQ(a.meta.inputs[i].view, b.meta.inputs[i].view) << i;
  }
  ASSERT_EQ(a.meta.outputs.size(), b.meta.outputs.size());
  for (size_t i = 0; i < a.meta.outputs.size(); ++i) {
    EXPECT_EQ(a.meta.outputs[i].kind, b.meta.outputs[i].kind) << i;
    EXPECT_EQ(a.meta.outputs[i].input, b.meta.outputs[i].input) << i;
  }
  for (size_t i = 0; i < a.fw->placeholders().size(); ++i)
    EXPECT_EQ(a.fw->placeholders()[i]->meta().tensor.requires_grad,
              b.fw->placeholders()[i]->meta().tensor.requires_grad)
        << i;
}

TEST(CompileCache, HitReturnsIdenticalGraphsWithoutRunningThePipeline) {
  TempDir dir;
  reset_compile_cache_stats();
  auto g = graph();
  bool hit = true;
  TrainingArtifacts miss = compile_for_training_cached(*g, kGrad, {}, dir.str(), kVersion, &hit);
  EXPECT_FALSE(hit);
  CompileCacheStats s = compile_cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.saved, 1);
  ASSERT_NE(miss.joint, nullptr);

  TrainingArtifacts again =
      compile_for_training_cached(*graph(), kGrad, {}, dir.str(), kVersion, &hit);
  EXPECT_TRUE(hit);
  s = compile_cache_stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.saved, 1);  // nothing written on a hit
  expect_same_artifacts(miss, again);
  // The pipeline did not run: no joint graph, no explanation, one "cache_load" phase.
  EXPECT_EQ(again.joint, nullptr);
  EXPECT_EQ(again.functional, nullptr);
  EXPECT_EQ(again.explain, nullptr);
  ASSERT_EQ(again.phases_us.size(), 1u);
  EXPECT_EQ(again.phases_us[0].first, "cache_load");
  // The entry is the documented text format, named by its key.
  std::string key = training_cache_key(*g, kGrad, {}, kVersion);
  std::string text = read_all(dir.path / (key + ".entry"));
  EXPECT_EQ(text.rfind("aotgrad-compile-cache 1 training " + key + "\naotgrad test-version\n", 0),
            0u);
  EXPECT_NE(text.find("\ngraph fw "), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 72, 7), "sha256 ");
}

TEST(CompileCache, EntryRoundTripsThroughText) {
  auto g = graph();
  TrainingArtifacts a = compile_for_training(*g, kGrad);
  std::string text = serialize_training_entry("k", kVersion, a);
  TrainingArtifacts b = parse_training_entry(text, "k");
  expect_same_artifacts(a, b);
  EXPECT_EQ(serialize_training_entry("k", kVersion, b), text);
}

TEST(CompileCache, InferenceEntryRoundTrips) {
  auto g = graph();
  FunctionalizeResult r = functionalize(*g);
  InferenceArtifacts a{std::shared_ptr<const Graph>(std::move(r.graph)), r.meta,
                       std::shared_ptr<const Graph>(std::move(r.input_views))};
  std::string text = serialize_inference_entry("key1", kVersion, a);
  InferenceArtifacts b = parse_inference_entry(text, "key1");
  EXPECT_EQ(print_graph(*a.fw), print_graph(*b.fw));
  EXPECT_EQ(print_graph(*a.input_views), print_graph(*b.input_views));
  EXPECT_EQ(b.meta.mutated_inputs_returned, std::vector<int>{3});
  EXPECT_EQ(serialize_inference_entry("key1", kVersion, b), text);
  // A training entry is not an inference entry.
  std::string train = serialize_training_entry("key1", kVersion, compile_for_training(*g, kGrad));
  EXPECT_THROW(parse_inference_entry(train, "key1"), Error);
}

// Each bad entry: one warning naming the file and the cause, the artifacts as compiled, and the
// entry rewritten so that the next compilation hits.
TEST(CompileCache, BadEntriesAreReportedRecompiledAndOverwritten) {
  auto g = graph();
  std::string key = training_cache_key(*g, kGrad, {}, kVersion);
  TrainingArtifacts reference = compile_for_training(*g, kGrad);
  std::string good = serialize_training_entry(key, kVersion, reference);
  std::string other_key = serialize_training_entry(std::string(64, '0'), kVersion, reference);
  std::string flipped = good;
  flipped[good.find("relu")] = 'R';
  std::string old_format = good;
  old_format.replace(0, std::string("aotgrad-compile-cache 1").size(), "aotgrad-compile-cache 0");
  struct Case {
    const char* name;
    std::string text;
    const char* cause;
  };
  std::vector<Case> cases = {
      {"truncated", good.substr(0, good.size() / 2), "truncated"},
      {"truncated in the trailer", good.substr(0, good.size() - 10), "truncated"},
      {"garbage",
       "\x7f"
       "ELF\x01\x02 random bytes\n\n",
       "not a compile cache entry"},
      {"empty", "", "not a compile cache entry"},
      {"wrong format version", old_format, "format version '0'"},
      {"changed byte", flipped, "checksum mismatch"},
      {"another key", other_key, "written for key"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    fs::path entry = dir.path / (key + ".entry");
    write_all(entry, c.text);
    reset_compile_cache_stats();
    testing::internal::CaptureStderr();
    bool hit = true;
    TrainingArtifacts a = compile_for_training_cached(*g, kGrad, {}, dir.str(), kVersion, &hit);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(hit);
    expect_same_artifacts(a, reference);
    EXPECT_NE(err.find(entry.string()), std::string::npos) << err;
    EXPECT_NE(err.find(c.cause), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;  // one warning
    CompileCacheStats s = compile_cache_stats();
    EXPECT_EQ(s.corrupt, 1);
    EXPECT_EQ(s.misses, 1);
    EXPECT_EQ(s.saved, 1);
    EXPECT_EQ(read_all(entry), good);  // overwritten with a whole entry
    testing::internal::CaptureStderr();
    compile_for_training_cached(*g, kGrad, {}, dir.str(), kVersion, &hit);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_TRUE(hit);
  }
}

TEST(CompileCache, ParseErrorsSayWhatIsWrong) {
  auto g = graph();
  TrainingArtifacts a = compile_for_training(*g, kGrad);
  std::string good = serialize_training_entry("k", kVersion, a);
  auto message = [](const std::string& text) {
    try {
      parse_training_entry(text, "k");
    } catch (const Error& e) {
      return e.message();
    }
    return std::string("no error");
  };
  // A body edited and re-signed: the reader names the line.
  auto resign = [](std::string body) { return body + "sha256 " + sha256_hex(body) + "\n"; };
  std::string body = good.substr(0, good.size() - 72);
  std::string bad_count = body;
  bad_count.replace(bad_count.find("\nsaved "), 8, "\nsaved 9");
  EXPECT_NE(message(resign(bad_count)).find("'saved' count does not match"), std::string::npos)
      << message(resign(bad_count));
  std::string bad_graph = body;
  bad_graph.replace(bad_graph.find("torch.ops.aten.relu.default"), 27,
                    "torch.ops.aten.reluX.default");
  std::string m = message(resign(bad_graph));
  EXPECT_NE(m.find("graph 'fw'"), std::string::npos) << m;
  EXPECT_NE(m.find("reluX"), std::string::npos) << m;
  EXPECT_EQ(m.rfind("line ", 0), 0u) << m;
  EXPECT_EQ(message(resign(body + "extra\n")).find("line "), 0u);
}

TEST(CompileCache, KeysCoverGraphFlagsConfigAndVersion) {
  auto g = graph();
  std::vector<std::string> keys;
  keys.push_back(training_cache_key(*g, kGrad, {}, kVersion));
  EXPECT_EQ(training_cache_key(*graph(), kGrad, {}, kVersion), keys[0]);  // deterministic
  keys.push_back(training_cache_key(*g, {true, true, true, false}, {}, kVersion));
  keys.push_back(training_cache_key(*g, kGrad, {}, "other-version"));
  PipelineOptions o;
  o.partition = PartitionKind::kDefault;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.decompositions = DecompositionTable::full();
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.min_cut.activation_memory_budget = 0.5;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o.min_cut.activation_memory_budget = 0.5000001;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o.min_cut.memory_budget_solver = KnapsackSolver::kGreedy;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.min_cut.cse = false;
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  o = {};
  o.min_cut.static_lifetime_inputs = {false, true, true, false};
  keys.push_back(training_cache_key(*g, kGrad, o, kVersion));
  // Another graph, and the same text with a recompute tag the text does not show.
  auto g2 = graph();
  g2->find("relu")->info().recompute = RecomputePolicy::MustSave;
  keys.push_back(training_cache_key(*g2, kGrad, {}, kVersion));
  auto g3 = parse_graph(R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]", counter: "i64[]"):
    add_ = torch.ops.aten.add_.Tensor(counter, 1)
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.sigmoid.default(addmm)
    sum_1 = torch.ops.aten.sum.default(relu)
    return (sum_1, relu)
)",
                        aten_ops());
  keys.push_back(training_cache_key(*g3, kGrad, {}, kVersion));
  keys.push_back(inference_cache_key(*g, false, DecompositionTable::core(), kVersion));
  keys.push_back(inference_cache_key(*g, true, DecompositionTable::core(), kVersion));
  keys.push_back(inference_cache_key(*g, false, DecompositionTable::none(), kVersion));
  std::set<std::string> distinct(keys.begin(), keys.end());
  EXPECT_EQ(distinct.size(), keys.size());
  for (const std::string& k : keys) EXPECT_EQ(k.size(), 64u);
  // The running build is part of every key: the executable's size and modification time.
  EXPECT_NE(compile_cache_build_id().find('@'), std::string::npos) << compile_cache_build_id();
  EXPECT_EQ(&compile_cache_build_id(), &compile_cache_build_id());
  // The verifier flag does not change the result, so it is not in the key.
  o = {};
  o.verify = false;
  EXPECT_EQ(training_cache_key(*g, kGrad, o, kVersion), keys[0]);
}

// Threads compiling the same graph at once into one directory: every result is the compiled one,
// the entry is whole, and no temporary file is left behind.
TEST(CompileCache, ConcurrentWritersLeaveAValidEntry) {
  TempDir dir;
  auto g = graph();
  TrainingArtifacts reference = compile_for_training(*g, kGrad);
  std::string key = training_cache_key(*g, kGrad, {}, kVersion);
  std::vector<TrainingArtifacts> results(6);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] {
      auto own = graph();
      results[i] = compile_for_training_cached(*own, kGrad, {}, dir.str(), kVersion);
    });
  for (auto& t : threads) t.join();
  for (const TrainingArtifacts& r : results) expect_same_artifacts(r, reference);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path))
    files.push_back(e.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{key + ".entry"});
  expect_same_artifacts(parse_training_entry(read_all(dir.path / (key + ".entry")), key),
                        reference);
}

TEST(CompileCache, UnusableDirectoryWarnsOnceAndCompiles) {
  TempDir dir;
  write_all(dir.path / "file", "not a directory");
  std::string bad = (dir.path / "file" / "cache").string();
  reset_compile_cache_stats();
  auto g = graph();
  testing::internal::CaptureStderr();
  bool hit = true;
  TrainingArtifacts a = compile_for_training_cached(*g, kGrad, {}, bad, kVersion, &hit);
  TrainingArtifacts b = compile_for_training_cached(*g, kGrad, {}, bad, kVersion, &hit);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(hit);
  ASSERT_NE(a.joint, nullptr);
  EXPECT_EQ(print_graph(*a.fw), print_graph(*b.fw));
  EXPECT_NE(err.find("compile cache directory '" + bad + "' cannot be used"), std::string::npos)
      << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  CompileCacheStats s = compile_cache_stats();
  EXPECT_EQ(s.bypasses, 2);
  EXPECT_EQ(s.hits + s.misses + s.saved, 0);
}

TEST(CompileCache, NoReadIsABypassThatStillWrites) {
  TempDir dir;
  reset_compile_cache_stats();
  auto g = graph();
  bool hit = true;
  compile_for_training_cached(*g, kGrad, {}, dir.str(), kVersion, &hit);
  TrainingArtifacts a =
      compile_for_training_cached(*g, kGrad, {}, dir.str(), kVersion, &hit, false);
  EXPECT_FALSE(hit);
  EXPECT_NE(a.joint, nullptr);
  CompileCacheStats s = compile_cache_stats();
  EXPECT_EQ(s.bypasses, 1);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.saved, 2);
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (const char* v = std::getenv(n)) old = v;
    if (value)
      ::setenv(n, value, 1);
    else
      ::unsetenv(n);
  }
  ~ScopedEnv() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

TEST(CompileCache, DefaultDirectory) {
  {
    ScopedEnv a("AOTGRAD_CACHE_DIR", "/somewhere/cache");
    EXPECT_EQ(default_compile_cache_dir(), "/somewhere/cache");
    EXPECT_EQ(resolve_compile_cache_dir(std::nullopt), "/somewhere/cache");
    EXPECT_EQ(resolve_compile_cache_dir(std::string("mine")), "mine");
    EXPECT_EQ(resolve_compile_cache_dir(std::string("off")), "");
    EXPECT_EQ(resolve_compile_cache_dir(std::string("")), "");
  }
  for (const char* off : {"off", "0", "", "none", "false"}) {
    ScopedEnv a("AOTGRAD_CACHE_DIR", off);
    EXPECT_EQ(default_compile_cache_dir(), "") << off;
  }
  ScopedEnv a("AOTGRAD_CACHE_DIR", nullptr);
  {
    ScopedEnv x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_compile_cache_dir(), "/xdg/aotgrad");
  }
  ScopedEnv x("XDG_CACHE_HOME", nullptr);
  {
    ScopedEnv h("HOME", "/home/someone");
    EXPECT_EQ(default_compile_cache_dir(), "/home/someone/.cache/aotgrad");
  }
  ScopedEnv h("HOME", nullptr);
  EXPECT_EQ(default_compile_cache_dir(), "");
}

TEST(CompileCache, LogsHitsMissesAndCorruptEntries) {
  TempDir dir;
  std::ostringstream os;
  LogSettings s;
  s.cache = true;
  set_log_settings(s);
  set_log_stream(&os);
  auto g = graph();
  std::string key = training_cache_key(*g, kGrad, {}, kVersion);
  compile_for_training_cached(*g, kGrad, {}, dir.str(), kVersion);
  compile_for_training_cached(*g, kGrad, {}, dir.str(), kVersion);
  write_all(dir.path / (key + ".entry"), "garbage\n");
  testing::internal::CaptureStderr();
  compile_for_training_cached(*g, kGrad, {}, dir.str(), kVersion);
  testing::internal::GetCapturedStderr();
  set_log_stream(nullptr);
  set_log_settings({});
  std::string log = os.str();
  EXPECT_NE(log.find("aotgrad cache: miss for key " + key + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("aotgrad cache: saved " + (dir.path / (key + ".entry")).string()),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("aotgrad cache: hit for key " + key), std::string::npos) << log;
  EXPECT_NE(log.find("aotgrad cache: corrupt entry"), std::string::npos) << log;
  // Nothing is logged with the channel off.
  std::ostringstream quiet;
  set_log_stream(&quiet);
  compile_for_training_cached(*g, kGrad, {}, dir.str(), kVersion);
  set_log_stream(nullptr);
  EXPECT_EQ(quiet.str(), "");
}

// A recomputed random op: the entry carries run_and_save_rng_state / run_with_rng_state and the
// rng state placeholder, and parses back to the same graphs.
TEST(CompileCache, RngRecomputationRoundTrips) {
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
  TrainingArtifacts a = compile_for_training(*g, {true});
  std::string text = serialize_training_entry("k", kVersion, a);
  ASSERT_NE(text.find("run_with_rng_state"), std::string::npos);
  TrainingArtifacts b = parse_training_entry(text, "k");
  expect_same_artifacts(a, b);
}

}  // namespace
}  // namespace aotgrad

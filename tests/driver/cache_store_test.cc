// Tests for the compile cache through the driver: hits that do not run the pipeline, bad entries
// reported and rewritten, concurrent writers, an unusable directory, bypasses, the default
// directory and the cache log.
#include "aotgrad/driver/cache_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <thread>

#include "aotgrad/driver/cache_entry.h"
#include "aotgrad/driver/cache_key.h"
#include "aotgrad/support/logging.h"
#include "cache_test_util.h"

namespace aotgrad {
namespace {

using namespace cache_test;

TEST(CompileCache, HitReturnsIdenticalGraphsWithoutRunningThePipeline) {
  TempDir dir;
  reset_compile_cache_stats();
  auto g = graph();
  TrainingArtifacts miss = compile_for_training(*g, kGrad, cached_in(dir.str()));
  EXPECT_FALSE(miss.cache_hit);
  CompileCacheStats s = compile_cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.saved, 1);
  ASSERT_NE(miss.joint, nullptr);

  TrainingArtifacts again = compile_for_training(*graph(), kGrad, cached_in(dir.str()));
  EXPECT_TRUE(again.cache_hit);
  s = compile_cache_stats();
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.saved, 1);  // nothing written on a hit
  expect_same_artifacts(miss, again);
  // The pipeline did not run: no joint graph, no explanation; the composite ops decomposed, then
  // the entry loaded.
  EXPECT_EQ(again.joint, nullptr);
  EXPECT_EQ(again.functional, nullptr);
  EXPECT_EQ(again.explain, nullptr);
  ASSERT_EQ(again.stages.size(), 2u);
  EXPECT_EQ(again.stages[0].name, "decompose_composites");
  EXPECT_EQ(again.stages[1].name, "cache_load");
  // The entry is the documented text format, named by its key.
  std::string key = training_cache_key(*g, kGrad, {}, version());
  std::string text = read_all(dir.path / (key + ".entry"));
  EXPECT_EQ(text.rfind("aotgrad-compile-cache 5 training " + key + "\naotgrad ", 0), 0u);
}

TEST(CompileCache, InferenceHitGivesTheSameGraph) {
  TempDir dir;
  auto g = graph();
  InferenceArtifacts miss = compile_for_inference(*g, cached_in(dir.str()));
  InferenceArtifacts hit = compile_for_inference(*g, cached_in(dir.str()));
  EXPECT_FALSE(miss.cache_hit);
  EXPECT_TRUE(hit.cache_hit);
  EXPECT_EQ(print_graph(*miss.fw), print_graph(*hit.fw));
  EXPECT_EQ(print_graph(*miss.input_views), print_graph(*hit.input_views));
  EXPECT_EQ(print_graph(*compile_for_inference(*g, cached_in("")).fw), print_graph(*hit.fw));
}

// Each bad entry: one warning naming the file and the cause, the artifacts as compiled, and the
// entry rewritten so that the next compilation hits.
TEST(CompileCache, BadEntriesAreReportedRecompiledAndOverwritten) {
  auto g = graph();
  std::string key = training_cache_key(*g, kGrad, {}, version());
  TrainingArtifacts reference = compile_for_training(*g, kGrad, cached_in(""));
  std::string good;
  {
    TempDir dir;
    compile_for_training(*g, kGrad, cached_in(dir.str()));
    good = read_all(dir.path / (key + ".entry"));
  }
  CompileState state = begin_compilation(CompileKind::kTraining, *g, kGrad);
  training_pipeline(cached_in("")).run(state);
  std::string other_key = serialize_cache_entry(std::string(64, '0'), version(), state);
  std::string flipped = good;
  flipped[good.find("relu")] = 'R';
  std::string old_format = good;
  old_format.replace(0, std::string("aotgrad-compile-cache 5").size(), "aotgrad-compile-cache 0");
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
    TrainingArtifacts a = compile_for_training(*g, kGrad, cached_in(dir.str()));
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(a.cache_hit);
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
    EXPECT_TRUE(compile_for_training(*g, kGrad, cached_in(dir.str())).cache_hit);
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  }
}

// Threads compiling the same graph at once into one directory: every result is the compiled one,
// the entry is whole, and no temporary file is left behind.
TEST(CompileCache, ConcurrentWritersLeaveAValidEntry) {
  TempDir dir;
  auto g = graph();
  TrainingArtifacts reference = compile_for_training(*g, kGrad, cached_in(""));
  std::string key = training_cache_key(*g, kGrad, {}, version());
  std::vector<TrainingArtifacts> results(6);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i)
    threads.emplace_back([&, i] {
      auto own = graph();
      results[i] = compile_for_training(*own, kGrad, cached_in(dir.str()));
    });
  for (auto& t : threads) t.join();
  for (const TrainingArtifacts& r : results) expect_same_artifacts(r, reference);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir.path))
    files.push_back(e.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{key + ".entry"});
  CompileState s;
  s.kind = CompileKind::kTraining;
  EXPECT_NO_THROW(parse_cache_entry(read_all(dir.path / (key + ".entry")), key, s));
}

TEST(CompileCache, UnusableDirectoryWarnsOnceAndCompiles) {
  TempDir dir;
  write_all(dir.path / "file", "not a directory");
  std::string bad = (dir.path / "file" / "cache").string();
  reset_compile_cache_stats();
  auto g = graph();
  testing::internal::CaptureStderr();
  TrainingArtifacts a = compile_for_training(*g, kGrad, cached_in(bad));
  TrainingArtifacts b = compile_for_training(*g, kGrad, cached_in(bad));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(b.cache_hit);
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
  compile_for_training(*g, kGrad, cached_in(dir.str()));
  CompileOptions o = cached_in(dir.str());
  o.read_cache = false;
  TrainingArtifacts a = compile_for_training(*g, kGrad, o);
  EXPECT_FALSE(a.cache_hit);
  EXPECT_NE(a.joint, nullptr);
  CompileCacheStats s = compile_cache_stats();
  EXPECT_EQ(s.bypasses, 1);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.saved, 2);
}

// Exports are never cached.
TEST(CompileCache, ExportsAreNotCached) {
  TempDir dir;
  reset_compile_cache_stats();
  compile_for_export(*graph(), kGrad, cached_in(dir.str()));
  compile_for_export(*graph(), {}, cached_in(dir.str()));
  CompileCacheStats s = compile_cache_stats();
  EXPECT_EQ(s.hits + s.misses + s.saved + s.bypasses, 0);
  EXPECT_TRUE(fs::is_empty(dir.path));
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
  std::string key = training_cache_key(*g, kGrad, {}, version());
  compile_for_training(*g, kGrad, cached_in(dir.str()));
  compile_for_training(*g, kGrad, cached_in(dir.str()));
  write_all(dir.path / (key + ".entry"), "garbage\n");
  testing::internal::CaptureStderr();
  compile_for_training(*g, kGrad, cached_in(dir.str()));
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
  compile_for_training(*g, kGrad, cached_in(dir.str()));
  set_log_stream(nullptr);
  EXPECT_EQ(quiet.str(), "");
}

}  // namespace
}  // namespace aotgrad

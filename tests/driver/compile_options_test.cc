// Tests for the compile options' table (driver/compile_options.h): each option declared once, its
// default the struct's, its parsing and its place in the compile cache's key.
#include "aotgrad/driver/compile_options.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "../error_of.h"
#include "aotgrad/ir/error.h"

namespace aotgrad {
namespace {

const CompileOptionDecl& decl(std::string_view name) {
  for (const CompileOptionDecl& d : compile_option_table())
    if (d.name == name) return d;
  throw std::out_of_range(std::string(name));
}

// The keys of an inference and of a training compilation.
std::string both_keys(const CompileOptions& o) {
  return compile_options_key(o, PipelineKind::kInference) + "|" +
         compile_options_key(o, PipelineKind::kTraining);
}

TEST(CompileOptions, EachOptionIsDeclaredOnceWithHelpAndParser) {
  std::set<std::string_view> names;
  for (const CompileOptionDecl& d : compile_option_table()) {
    EXPECT_TRUE(names.insert(d.name).second) << "declared twice: " << d.name;
    EXPECT_FALSE(d.help.empty()) << d.name;
    EXPECT_TRUE(static_cast<bool>(d.parse)) << d.name;
    if (!d.applies_with.empty()) {
      std::string_view other = d.applies_with.substr(0, d.applies_with.find('='));
      EXPECT_NO_THROW(decl(other)) << d.name << " applies with an undeclared option";
    }
  }
  // The min-cut's switches, the budget, the schedule and the cache are all in the one table.
  for (const char* name : {"decomp", "partition", "memory-budget", "max-slowdown", "solver", "cse",
                           "ban-if-reduction", "schedule", "zero-grad", "cache-dir"})
    EXPECT_TRUE(names.count(name)) << name;
}

// The default a declaration states is CompileOptions' own: parsing it changes nothing.
TEST(CompileOptions, DeclaredDefaultsAreTheStructsDefaults) {
  const std::string before = both_keys(CompileOptions{});
  for (const CompileOptionDecl& d : compile_option_table()) {
    if (d.metavar.empty() || d.default_text.empty()) continue;  // a flag; no text to state
    CompileOptions o;
    d.parse(o, std::string(d.default_text));
    EXPECT_EQ(both_keys(o), before) << "--" << d.name << "=" << d.default_text;
  }
}

// Every option with a key changes the key when it changes; one without (cache-dir) does not.
TEST(CompileOptions, EveryKeyedOptionChangesTheKey) {
  const std::string base = both_keys(CompileOptions{});
  for (const CompileOptionDecl& d : compile_option_table()) {
    if (d.name == "cost-model") continue;  // measured needs a profile: CacheKey's tests cover it
    std::vector<std::string> candidates = {"0.5", "7", "auto", "none", "full", ""};
    std::stringstream ss{std::string(d.metavar)};
    for (std::string c; std::getline(ss, c, '|');) candidates.push_back(c);
    bool changed = false;
    for (const std::string& c : candidates) {
      CompileOptions o;
      try {
        d.parse(o, c);
      } catch (const Error&) {
        continue;
      }
      changed = changed || both_keys(o) != base;
    }
    EXPECT_EQ(changed, static_cast<bool>(d.key)) << "--" << d.name;
  }
}

// An inference compilation's key holds only what inference reads.
TEST(CompileOptions, AKeyHoldsWhatItsPipelineReads) {
  const std::string inference = compile_options_key(CompileOptions{}, PipelineKind::kInference);
  EXPECT_NE(inference.find("decomp="), std::string::npos);
  EXPECT_NE(inference.find("keep-inference-input-mutations=off"), std::string::npos);
  EXPECT_EQ(inference.find("memory-budget="), std::string::npos);
  const std::string training = compile_options_key(CompileOptions{}, PipelineKind::kTraining);
  EXPECT_NE(training.find("memory-budget=1\n"), std::string::npos);
  EXPECT_NE(training.find("schedule=memory\n"), std::string::npos);
  EXPECT_EQ(training.find("keep-inference-input-mutations"), std::string::npos);
  EXPECT_EQ(training.find("cache-dir"), std::string::npos);
}

TEST(CompileOptions, ParsesInTableOrderAndChecksWhereAnOptionApplies) {
  CompileOptions o = parse_compile_options(
      {{"max-slowdown", "0.25"}, {"memory-budget", "auto"}, {"solver", "greedy"}});
  EXPECT_EQ(o.min_cut.max_slowdown, 0.25);  // memory-budget first, whatever the given order
  EXPECT_EQ(o.min_cut.memory_budget_solver, KnapsackSolver::kGreedy);
  o = parse_compile_options({{"memory-budget", "0.5"}, {"zero-grad", "in-place"}});
  EXPECT_EQ(o.min_cut.activation_memory_budget, 0.5);
  EXPECT_LT(o.min_cut.max_slowdown, 0);
  EXPECT_TRUE(o.min_cut.gradients_kept);
  EXPECT_TRUE(parse_compile_options({{"keep-inference-input-mutations", ""}})
                  .keep_inference_input_mutations);

  EXPECT_EQ(error_of([] {
              parse_compile_options({{"memory-budget", "2"}});
            }),
            "--memory-budget takes a number in [0, 1] or auto, got '2'");
  EXPECT_EQ(error_of([] {
              parse_compile_options({{"max-slowdown", "0.2"}});
            }),
            "--max-slowdown applies to --memory-budget=auto");
  EXPECT_EQ(error_of([] {
              parse_compile_options({{"partition", "default"}, {"solver", "dp"}});
            }),
            "--solver applies to --partition=min_cut");
  EXPECT_EQ(error_of([] {
              parse_compile_options({{"cse", "maybe"}});
            }),
            "--cse takes on or off, got 'maybe'");
  EXPECT_EQ(error_of([] {
              parse_compile_options({{"partition", "best"}});
            }),
            "--partition: unknown partition 'best' (known: default, min_cut)");
  EXPECT_EQ(error_of([] {
              parse_compile_options({{"reinplace", "on"}});
            }),
            "--reinplace: not a compile option");
  // A missing profile is the file's error, not a usage error.
  EXPECT_THROW(parse_compile_options(
                   {{"cost-model", "measured"}, {"cost-profile", "/nonexistent/profile.json"}}),
               CompileOptionFileError);
  EXPECT_EQ(error_of([] {
              parse_compile_options({{"cost-profile", "/nonexistent/p.json"}});
            }),
            "--cost-profile applies to --cost-model=measured");
}

}  // namespace
}  // namespace aotgrad

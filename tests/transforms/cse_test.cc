// Tests for the CSE and DCE dry runs the min-cut partitioner uses to skip copying the joint
// graph: on every pass case of tests/passes (cse_*.fx, dce_*.fx), the dry run says "changes"
// exactly when the pass changes the graph. What the passes do to graphs is checked by the .fx
// cases.
#include "aotgrad/transforms/passes/cse.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/transforms/passes/dce.h"

namespace aotgrad {
namespace {

// The graph text of a pass case: its lines up to the first CHECK line.
std::string case_graph(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string line, text;
  while (std::getline(f, line) && line.rfind("# CHECK", 0) != 0) text += line + "\n";
  return text;
}

std::vector<std::filesystem::path> cases(const std::string& prefix) {
  std::vector<std::filesystem::path> out;
  std::filesystem::path dir = std::filesystem::path(AOTGRAD_TEST_DATA).parent_path() / "passes";
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".fx" && e.path().filename().string().rfind(prefix, 0) == 0)
      out.push_back(e.path());
  return out;
}

TEST(Cse, DryRunAgreesWithThePass) {
  auto files = cases("cse_");
  ASSERT_GE(files.size(), 5u);
  int merging = 0;
  for (const auto& p : files) {
    auto g = parse_graph(case_graph(p), aten_ops());
    bool dry = has_common_subexpressions(*g);
    CommonSubexpressionElimination cse;
    cse.run(*g);
    EXPECT_EQ(dry, cse.changes() > 0) << p.filename();
    merging += dry;
  }
  EXPECT_GT(merging, 0);
  EXPECT_LT(merging, static_cast<int>(files.size()));
}

TEST(Dce, DryRunAgreesWithThePass) {
  auto files = cases("dce_");
  ASSERT_GE(files.size(), 2u);
  for (const auto& p : files) {
    auto g = parse_graph(case_graph(p), aten_ops());
    bool dry = has_dead_code(*g);
    EXPECT_EQ(dry, eliminate_dead_code(*g) > 0) << p.filename();
    EXPECT_FALSE(has_dead_code(*g)) << p.filename();
  }
}

}  // namespace
}  // namespace aotgrad

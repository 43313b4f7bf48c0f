// aotgrad: every graph exported from PyTorch (tests/data/models/*.fx) parses and verifies.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> model_files() {
  std::vector<fs::path> out;
  fs::path dir = fs::path(AOTGRAD_TEST_DATA) / "models";
  if (!fs::is_directory(dir)) return out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".fx") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The ops a graph text calls (`torch.ops.aten.<op>.<overload>`) that the registry lacks.
std::set<std::string> unknown_ops(const std::string& text) {
  std::set<std::string> out;
  static const std::regex kCall(R"(torch\.ops\.aten\.([A-Za-z0-9_]+)\.([A-Za-z0-9_]+))");
  for (std::sregex_iterator it(text.begin(), text.end(), kCall), end; it != end; ++it) {
    std::string name = (*it)[1].str() + "." + (*it)[2].str();
    if (!aten_ops().find(name)) out.insert(name);
  }
  return out;
}

void check_model(const fs::path& p) {
  std::string text = read_file(p);
  std::set<std::string> unknown = unknown_ops(text);
  if (!unknown.empty()) {
    std::string list;
    for (auto& u : unknown) list += " " + u;
    FAIL() << p.filename().string() << " calls ops the registry lacks:" << list;
  }
  try {
    auto g = parse_graph(text, aten_ops());
    verify(*g);
    // The printed form parses back to a graph that prints the same.
    std::string printed = print_graph(*g);
    auto g2 = parse_graph(printed, aten_ops());
    EXPECT_EQ(print_graph(*g2), printed);
  } catch (const Error& e) {
    ADD_FAILURE() << p.filename().string() << ":" << e.formatted();
  }
}

TEST(ModelsParse, ModelsExist) {
  EXPECT_FALSE(model_files().empty()) << "no .fx files under " << AOTGRAD_TEST_DATA << "/models";
}

// One test per exported model, registered from the directory listing: ModelsParse.mlp, ...
class ModelTest : public testing::Test {
 public:
  explicit ModelTest(fs::path path) : path_(std::move(path)) {}
  void TestBody() override { check_model(path_); }

 private:
  fs::path path_;
};

const bool kRegistered = [] {
  for (const auto& p : model_files()) {
    std::string name = p.stem().string();
    testing::RegisterTest("ModelsParse", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [p]() -> testing::Test* { return new ModelTest(p); });
  }
  return true;
}();

}  // namespace
}  // namespace aotgrad

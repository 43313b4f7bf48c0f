// Test helpers of the driver's cache tests: a temporary directory, file bytes, the test graph.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotgrad/driver/driver.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/version.h"

namespace aotgrad::cache_test {

namespace fs = std::filesystem;

inline constexpr const char* kVersion = "test-version";

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

inline std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_all(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

// §13.20's linear + relu, with a BatchNorm-like buffer update so the entry has a mutated input.
inline const char* kGraph = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]", counter: "i64[]"):
    add_ = torch.ops.aten.add_.Tensor(counter, 1)
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.relu.default(addmm)
    sum_1 = torch.ops.aten.sum.default(relu)
    return (sum_1, relu)
)";
inline const std::vector<bool> kGrad = {false, true, true, false};

inline std::shared_ptr<Graph> graph() { return parse_graph(kGraph, aten_ops()); }

// Options with the cache in `dir` ("" for none).
inline CompileOptions cached_in(const std::string& dir) {
  CompileOptions o;
  o.cache_dir = dir.empty() ? std::string("off") : dir;
  return o;
}

inline void expect_same_artifacts(const TrainingArtifacts& a, const TrainingArtifacts& b) {
  EXPECT_EQ(print_graph(*a.fw), print_graph(*b.fw));
  EXPECT_EQ(print_graph(*a.bw), print_graph(*b.bw));
  EXPECT_EQ(print_graph(*a.input_views), print_graph(*b.input_views));
  EXPECT_EQ(a.saved, b.saved);
  EXPECT_EQ(a.num_forward_outputs, b.num_forward_outputs);
  EXPECT_EQ(a.joint_info.tangent_of_output, b.joint_info.tangent_of_output);
  EXPECT_EQ(a.joint_info.primal_requires_grad, b.joint_info.primal_requires_grad);
  EXPECT_EQ(a.joint_info.leaf_output, b.joint_info.leaf_output);
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

}  // namespace aotgrad::cache_test

// Tests for what compile_for_training logs on each AOTGRAD_LOGS artifact.
#include "aotgrad/transforms/aot_pipeline.h"

#include <gtest/gtest.h>

#include <sstream>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/logging.h"

namespace aotgrad {
namespace {

// Restores quiet logging to std::cerr after a test.
struct CapturedLogs {
  std::ostringstream os;
  explicit CapturedLogs(const LogSettings& s) {
    set_log_settings(s);
    set_log_stream(&os);
  }
  ~CapturedLogs() {
    set_log_stream(nullptr);
    set_log_settings({});
  }
};

const char* kLinearRelu = R"(
def forward(self, x: "f32[4, 8]", w: "f32[16, 8]", b: "f32[16]"):
    t = torch.ops.aten.t.default(w)
    addmm = torch.ops.aten.addmm.default(b, x, t)
    relu = torch.ops.aten.relu.default(addmm)
    return (relu,)
)";

TEST(AotPipeline, LogsTheSelectedArtifacts) {
  auto g = parse_graph(kLinearRelu, aten_ops());
  {
    CapturedLogs logs(parse_log_settings("aot_joint_graph,aot_graphs"));
    compile_for_training(*g, {false, true, true});
    std::string out = logs.os.str();
    size_t joint = out.find("TRACED GRAPH\n ===== Joint graph ");
    size_t fw = out.find(" ===== Forward graph ");
    size_t bw = out.find(" ===== Backward graph ");
    ASSERT_NE(joint, std::string::npos) << out;
    ASSERT_NE(fw, std::string::npos) << out;
    ASSERT_NE(bw, std::string::npos) << out;
    EXPECT_LT(joint, fw);
    EXPECT_LT(fw, bw);
    EXPECT_NE(out.find("def forward(self, primals, tangents):"), std::string::npos);
    EXPECT_EQ(out.find("partitioner"), std::string::npos);
  }
  {
    CapturedLogs logs(parse_log_settings("partitioner"));
    compile_for_training(*g, {false, true, true});
    std::string out = logs.os.str();
    EXPECT_NE(out.find("min_cut_rematerialization_partition"), std::string::npos) << out;
    EXPECT_NE(out.find("saved: "), std::string::npos) << out;
    EXPECT_NE(out.find("banned: "), std::string::npos) << out;
    EXPECT_EQ(out.find("TRACED GRAPH"), std::string::npos);
  }
  {
    CapturedLogs logs(parse_log_settings("partitioner"));
    PipelineOptions o;
    o.partition = PartitionKind::kDefault;
    compile_for_training(*g, {false, true, true}, o);
    EXPECT_NE(logs.os.str().find("default_partition saves"), std::string::npos) << logs.os.str();
  }
  {
    CapturedLogs logs(LogSettings{});
    compile_for_training(*g, {false, true, true});
    EXPECT_EQ(logs.os.str(), "");
  }
}

}  // namespace
}  // namespace aotgrad

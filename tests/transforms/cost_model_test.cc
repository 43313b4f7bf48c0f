// Tests for the cost model: the measured curves' interpolation, the profile's JSON (round trip and
// every kind of bad file), the measured estimate per kind of op and the cache fingerprint.
#include "aotgrad/transforms/partition/cost_model.h"

#include <gtest/gtest.h>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {
namespace {

CostProfile profile() {
  CostProfile p;
  p.machine = "test CPU, 2 threads";
  p.threads = 2;
  p.matmul.points = {{1e3, 1e-6}, {1e6, 1e-5}, {1e9, 1e-2}};
  p.convolution.points = {{1e4, 2e-6}, {1e8, 2e-3}};
  p.memory.points = {{1e3, 5e-7}, {1e7, 1e-3}};
  p.ops["aten::sigmoid"].points = {{1e3, 4e-6}, {1e7, 4e-3}};
  return p;
}

std::string message_of(const std::string& json) {
  try {
    parse_cost_profile(json, "p.json");
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

TEST(CostModel, CurvesInterpolateInLogLogSpace) {
  CostCurve c;
  c.points = {{10, 1}, {1000, 100}};
  EXPECT_DOUBLE_EQ(c.seconds(1), 1);  // below the first point: its time
  EXPECT_DOUBLE_EQ(c.seconds(10), 1);
  EXPECT_NEAR(c.seconds(100), 10, 1e-9);  // halfway in log-log
  EXPECT_DOUBLE_EQ(c.seconds(1000), 100);
  EXPECT_DOUBLE_EQ(c.seconds(4000), 400);  // beyond: the last point's rate
}

TEST(CostModel, ProfileRoundTripsThroughJson) {
  CostProfile p = profile();
  std::string json = cost_profile_json(p);
  CostProfile q = parse_cost_profile(json, "p.json");
  EXPECT_EQ(q.machine, p.machine);
  EXPECT_EQ(q.threads, 2);
  EXPECT_EQ(q.matmul.points, p.matmul.points);
  EXPECT_EQ(q.convolution.points, p.convolution.points);
  EXPECT_EQ(q.memory.points, p.memory.points);
  ASSERT_EQ(q.ops.size(), 1u);
  EXPECT_EQ(q.ops.at("aten::sigmoid").points, p.ops.at("aten::sigmoid").points);
  EXPECT_EQ(cost_profile_json(q), json);
}

TEST(CostModel, BadProfilesNameTheFileAndTheCause) {
  const std::string head = R"({"format": "aotgrad cost profile", "version": 1, )";
  const std::string head2 = R"({"format": "aotgrad cost profile", "version": 2, )";
  const std::string curves = R"("matmul": [[1000, 1e-6]], "convolution": [[1000, 1e-6]], )";
  struct Case {
    std::string json, cause;
  };
  for (const Case& c : std::vector<Case>{
           {"{not json", "not JSON"},
           {R"({"format": "something else"})", "not a cost profile"},
           {R"({"format": "aotgrad cost profile", "version": 3})", "version is not 1 or 2"},
           {head + curves + R"("threads": 2})", "'memory' is not a non-empty list"},
           {head + curves + R"("memory": []})", "'memory' is not a non-empty list"},
           {head + curves + R"("memory": [[1000]]})", "is not [work, seconds]"},
           {head + curves + R"("memory": [[1000, -1]]})", "seconds < 0"},
           {head + curves + R"("memory": [[1000, 1], [1000, 2]]})", "does not increase"},
           {head + curves + R"("memory": [[1000, 2], [2000, 1]]})", "decrease"},
           // Version 2 has an object of op curves, each checked as the others.
           {head2 + curves + R"("memory": [[1000, 1]]})", "'ops' is not an object"},
           {head2 + curves + R"("memory": [[1000, 1]], "ops": [1]})", "'ops' is not an object"},
           {head2 + curves + R"("memory": [[1000, 1]], "ops": {"aten::gelu": []}})",
            "'aten::gelu' is not a non-empty list"},
           {head2 + curves + R"("memory": [[1000, 1]], "ops": {"aten::gelu": [[2, 1], [1, 2]]}})",
            "the work of 'aten::gelu' does not increase"},
       }) {
    std::string m = message_of(c.json);
    EXPECT_NE(m.find("cost profile 'p.json'"), std::string::npos) << c.json << ": " << m;
    EXPECT_NE(m.find(c.cause), std::string::npos) << c.json << ": " << m;
  }
  // A version-1 profile (no "ops") is still read; version 2's "ops" may be empty.
  EXPECT_EQ(message_of(head + curves + R"("memory": [[1000, 1], [2000, 1]]})"), "");
  EXPECT_EQ(message_of(head2 + curves + R"("memory": [[1000, 1]], "ops": {}})"), "");
}

TEST(CostModel, MissingProfileSaysToCalibrate) {
  try {
    read_cost_profile("/nonexistent/aotgrad/cost_profile.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("/nonexistent/aotgrad/cost_profile.json"), std::string::npos);
    EXPECT_NE(e.message().find("aotgrad calibrate"), std::string::npos) << e.message();
  }
}

TEST(CostModel, MeasuredEstimateByKindOfOp) {
  std::shared_ptr<Graph> g = parse_graph(R"(
def forward(self, a: "f32[100, 100]", b: "f32[100, 100]", img: "f32[2, 3, 8, 8]", w: "f32[4, 3, 3, 3]"):
    mm = torch.ops.aten.mm.default(a, b)
    relu = torch.ops.aten.relu.default(mm)
    view = torch.ops.aten.view.default(relu, [10000])
    sigmoid = torch.ops.aten.sigmoid.default(mm)
    conv = torch.ops.aten.convolution.default(img, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    return (view, conv, sigmoid)
)",
                                         aten_ops());
  verify(*g);
  CostModel m{CostModelKind::kMeasured, std::make_shared<const CostProfile>(profile())};
  const CostProfile& p = *m.profile;
  // mm: 2 * 100^3 FLOPs on the matmul curve.
  EXPECT_DOUBLE_EQ(call_flops(*g->find("mm")), 2e6);
  EXPECT_DOUBLE_EQ(estimate_runtime(*g->find("mm"), m), p.matmul.seconds(2e6));
  // relu: reads and writes 10000 floats on the memory curve.
  EXPECT_DOUBLE_EQ(call_bytes(*g->find("relu")), 80000);
  EXPECT_DOUBLE_EQ(estimate_runtime(*g->find("relu"), m), p.memory.seconds(80000));
  // sigmoid has a curve of its own (CostProfile::ops), at its bytes.
  EXPECT_DOUBLE_EQ(estimate_runtime(*g->find("sigmoid"), m),
                   p.ops.at("aten::sigmoid").seconds(80000));
  EXPECT_GT(estimate_runtime(*g->find("sigmoid"), m), estimate_runtime(*g->find("relu"), m));
  // A view moves no data: the memory curve's fixed cost.
  EXPECT_DOUBLE_EQ(estimate_runtime(*g->find("view"), m), p.memory.seconds(0));
  // [2, 4, 8, 8] outputs, 27 multiply-adds each, on the convolution curve.
  EXPECT_DOUBLE_EQ(estimate_runtime(*g->find("conv"), m), p.convolution.seconds(2.0 * 512 * 27));
  // Placeholders cost nothing measured, 1 in FLOPs (PyTorch's max(flops, 1)).
  EXPECT_DOUBLE_EQ(estimate_runtime(*g->find("a"), m), 0);
  EXPECT_DOUBLE_EQ(estimate_runtime(*g->find("a")), 1);
  CostModel none{CostModelKind::kMeasured, nullptr};
  EXPECT_THROW(estimate_runtime(*g->find("mm"), none), Error);
}

TEST(CostModel, FingerprintFollowsTheProfile) {
  CostModel flops;
  EXPECT_EQ(flops.fingerprint(), "flops");
  CostModel a{CostModelKind::kMeasured, std::make_shared<const CostProfile>(profile())};
  CostProfile other = profile();
  other.memory.points.back().second = 2e-3;
  CostModel b{CostModelKind::kMeasured, std::make_shared<const CostProfile>(other)};
  EXPECT_EQ(a.fingerprint().rfind("measured:", 0), 0u);
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  EXPECT_EQ(parse_cost_model("measured"), CostModelKind::kMeasured);
  EXPECT_THROW(parse_cost_model("cycles"), Error);
}

}  // namespace
}  // namespace aotgrad

// Tests for AOTGRAD_LOGS: parsing the names, the settings and the log stream.
#include "aotgrad/support/logging.h"

#include <gtest/gtest.h>

#include <sstream>

#include "aotgrad/support/error.h"

namespace aotgrad {
namespace {

TEST(Logging, ParsesNamesPlusPrefixAndAll) {
  LogSettings s = parse_log_settings("aot_joint_graph, +partitioner");
  EXPECT_TRUE(s.joint_graph);
  EXPECT_TRUE(s.partitioner);
  EXPECT_FALSE(s.graphs);
  EXPECT_FALSE(s.cache);
  LogSettings all = parse_log_settings("+all");
  EXPECT_TRUE(all.joint_graph && all.graphs && all.partitioner && all.cache && all.recompiles &&
              all.collectives);
  EXPECT_TRUE(parse_log_settings("recompiles").recompiles);
  EXPECT_TRUE(parse_log_settings("collectives").collectives);
  EXPECT_FALSE(parse_log_settings("").any());
  EXPECT_TRUE(parse_log_settings("cache,").cache);
}

TEST(Logging, UnknownNameListsTheValidOnes) {
  try {
    parse_log_settings("aot_graphs,joint_graph");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("unknown log name 'joint_graph'"), std::string::npos) << e.message();
    for (const std::string& n : log_artifact_names())
      EXPECT_NE(e.message().find(n), std::string::npos) << n;
  }
}

TEST(Logging, LogTextWritesOneBlockToTheStream) {
  std::ostringstream os;
  set_log_stream(&os);
  log_text("one");
  log_text("two\n");
  set_log_stream(nullptr);
  EXPECT_EQ(os.str(), "one\ntwo\n");
}

TEST(Logging, SetLogSettingsReplacesTheEnvironment) {
  LogSettings s;
  s.cache = true;
  set_log_settings(s);
  EXPECT_TRUE(log_settings().cache);
  EXPECT_FALSE(log_settings().graphs);
  set_log_settings({});
  EXPECT_FALSE(log_settings().any());
}

}  // namespace
}  // namespace aotgrad

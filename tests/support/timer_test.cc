// Tests for the stage timer: stages in order, totals that cover them, stages timed elsewhere.
#include "aotgrad/support/timer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace aotgrad {
namespace {

TEST(StageTimer, MarksConsecutiveStages) {
  StageTimer t;
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const StageTime& first = t.mark("first");
  EXPECT_EQ(first.name, "first");
  EXPECT_GE(first.wall_us, 2000);
  EXPECT_GE(first.cpu_us, 0);
  volatile double x = 0;
  for (int i = 0; i < 1000000; ++i) x = x + i;  // some CPU time
  t.mark("second");
  ASSERT_EQ(t.stages().size(), 2u);
  EXPECT_EQ(t.stages()[1].name, "second");
  double sum = t.stages()[0].wall_us + t.stages()[1].wall_us;
  EXPECT_NEAR(t.total_wall_us(), sum, 1.0);
  EXPECT_NEAR(t.total_cpu_us(), t.stages()[0].cpu_us + t.stages()[1].cpu_us, 1.0);
}

TEST(StageTimer, AddsStagesTimedElsewhere) {
  StageTimer t;
  t.add({"pipeline", 123.0, 100.0});
  t.add({"cache_load", 5.0});  // CPU time unknown
  t.mark("dump");
  ASSERT_EQ(t.stages().size(), 3u);
  EXPECT_EQ(t.stages()[0].wall_us, 123.0);
  EXPECT_EQ(t.stages()[1].cpu_us, -1);
  EXPECT_EQ(t.stages()[2].name, "dump");
  EXPECT_LT(t.stages()[2].wall_us, 1e6);  // measured from the last add, not from construction
}

}  // namespace
}  // namespace aotgrad

// aotgrad: the one stage timer -- wall-clock and process CPU time of consecutive stages (the
// compile pipeline's stages, a command's phases). Std only.
#pragma once

#include <chrono>
#include <ctime>
#include <string>
#include <vector>

namespace aotgrad {

/// One timed stage. CPU time is the process's (std::clock), which a loaded machine does not
/// inflate with time spent waiting for a core; negative when unknown.
struct StageTime {
  std::string name;
  double wall_us = 0;
  double cpu_us = -1;
};

/// Times consecutive stages: each mark() ends the stage that began at the previous mark (or at
/// construction) and starts the next one.
class StageTimer {
 public:
  StageTimer();
  /// Ends the current stage under `name`; returns its times.
  const StageTime& mark(std::string name);
  /// Records a stage timed elsewhere (a pipeline's) and restarts the clocks for the next one.
  void add(StageTime stage);
  /// Wall-clock and CPU time from construction to the last mark() or add().
  double total_wall_us() const;
  double total_cpu_us() const;
  const std::vector<StageTime>& stages() const { return stages_; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_, last_;
  std::clock_t cpu_start_, cpu_last_;
  std::vector<StageTime> stages_;
};

}  // namespace aotgrad

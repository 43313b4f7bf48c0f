// aotgrad: the stage timer.
#include "aotgrad/support/timer.h"

#include <utility>

namespace aotgrad {
namespace {

double cpu_us(std::clock_t ticks) { return 1e6 * static_cast<double>(ticks) / CLOCKS_PER_SEC; }

}  // namespace

StageTimer::StageTimer()
    : start_(Clock::now()), last_(start_), cpu_start_(std::clock()), cpu_last_(cpu_start_) {}

const StageTime& StageTimer::mark(std::string name) {
  Clock::time_point now = Clock::now();
  std::clock_t cpu = std::clock();
  stages_.push_back({std::move(name),
                     std::chrono::duration<double, std::micro>(now - last_).count(),
                     cpu_us(cpu - cpu_last_)});
  last_ = now;
  cpu_last_ = cpu;
  return stages_.back();
}

void StageTimer::add(StageTime stage) {
  stages_.push_back(std::move(stage));
  last_ = Clock::now();
  cpu_last_ = std::clock();
}

double StageTimer::total_wall_us() const {
  return std::chrono::duration<double, std::micro>(last_ - start_).count();
}

double StageTimer::total_cpu_us() const { return cpu_us(cpu_last_ - cpu_start_); }

}  // namespace aotgrad

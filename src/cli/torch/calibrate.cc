// aotgrad: `aotgrad calibrate` -- measures the cost profile and writes it.
#include "calibrate.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include "aotgrad/runtime/cost_calibration.h"
#include "aotgrad/support/file.h"

namespace aotgrad::cli {
namespace {

// "<rate> <unit>/s at the largest point".
std::string rate(const CostCurve& c, double scale, const char* unit) {
  const auto& [work, seconds] = c.points.back();
  return std::to_string(static_cast<long long>(work / seconds / scale)) + " " + unit +
         "/s at the largest point";
}

}  // namespace

int calibrate_machine(const Args& args) {
  std::string path = args.get("output").value_or(default_cost_profile_path());
  if (path.empty())
    throw UsageError{
        "no --output and no cache directory (set AOTGRAD_COST_PROFILE, "
        "XDG_CACHE_HOME or HOME)"};
  CalibrationOptions o;
  if (auto r = args.get("repetitions")) {
    try {
      size_t used = 0;
      o.repetitions = std::stoi(*r, &used);
      if (used != r->size() || o.repetitions < 1) throw 0;
    } catch (...) {
      throw UsageError{"--repetitions takes a positive integer, got '" + *r + "'"};
    }
  }
  CostProfile p = calibrate_cost_profile(o);
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  write_file_atomic(path, cost_profile_json(p));
  std::cout << "cost profile: " << path << "\n"
            << "machine: " << p.machine << "\n"
            << "matmul: " << rate(p.matmul, 1e9, "GFLOP") << "\n"
            << "convolution: " << rate(p.convolution, 1e9, "GFLOP") << "\n"
            << "memory: " << rate(p.memory, 1e9, "GB") << "\n";
  // Each op's time at its largest point against an add of the same bytes.
  for (const auto& [op, curve] : p.ops) {
    auto [bytes, seconds] = curve.points.back();
    char line[160];
    std::snprintf(line, sizeof line, "%s: %s (%.1fx an add of its bytes)\n", op.c_str(),
                  rate(curve, 1e9, "GB").c_str(), seconds / p.memory.seconds(bytes));
    std::cout << line;
  }
  return 0;
}

}  // namespace aotgrad::cli

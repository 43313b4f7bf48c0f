// training_fuzz: the differential fuzzer of aot_function's training path (training_fuzz.h,
// tests/fuzz/README.md). Usage:
//   training_fuzz --seeds=A:B [--shrink] [--print] [--configs=all]   seeds A .. B-1
//   training_fuzz --seed=N [--shrink] [--print]
//   training_fuzz --replay=FILE                                       a program's text, every
//   config training_fuzz --bug-shape=NAME                                    a PyTorch bug shape,
//   every config
// Exits 1 on any mismatch (an output, grad, aliasing, mutation or version counter that differs
// from eager, or an exception that is not an aotgrad Error naming a construct) that is not put
// down to a known issue (training_fuzz.h; --strict: on those too), 2 on bad usage.
#include "training_fuzz.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

namespace aotgrad::fuzz {
namespace {

struct Totals {
  int64_t cases = 0, eager_invalid = 0, runs = 0, matched = 0, bitwise = 0, raised = 0,
          mismatches = 0;
  std::map<std::string, int64_t> raised_by, known_by;
};

// A seed's configurations: the default one (budget 1, schedule, re-inplacing) and two others.
std::vector<Config> sample_configs(uint64_t seed) {
  std::vector<Config> all = all_configs();
  Rng r(seed ^ 0xC0FFEEULL);
  std::vector<Config> out = {all[0]};
  const int64_t a = r.between(1, 11), b = (a + r.between(1, 10) - 1) % 11 + 1;
  out.push_back(all[a]);
  out.push_back(all[b]);
  return out;
}

// Runs one program; prints what fails. Returns whether every configuration matched or raised.
bool run_one(const std::string& label, const Program& p, const std::vector<Config>& configs,
             bool shrink_it, bool print, bool strict, Totals& t) {
  if (print) std::cout << "# " << label << "\n" << print_program(p);
  ++t.cases;
  std::vector<ConfigResult> results = run_case(p, configs);
  bool ok = true;
  for (const ConfigResult& r : results) {
    switch (r.verdict) {
      case Verdict::kEagerInvalid: break;
      case Verdict::kMatch:
        ++t.runs;
        ++t.matched;
        t.bitwise += r.bitwise;
        break;
      case Verdict::kRaised:
        ++t.runs;
        ++t.raised;
        ++t.raised_by[r.category];
        if (print) std::cout << "# raised (" << r.category << "): " << r.detail << "\n";
        break;
      case Verdict::kMismatch:
        ++t.runs;
        if (!r.known.empty() && !strict) {
          ++t.known_by[r.known];
          if (print) std::cout << "# known issue " << r.known << ": " << r.detail << "\n";
          break;
        }
        ++t.mismatches;
        if (ok) {
          std::cout << "MISMATCH " << label << " [" << config_name(r.config) << "]: " << r.detail
                    << "\n";
          if (!print) std::cout << print_program(p);
          if (shrink_it) {
            Program small = shrink(p, r.config);
            std::cout << "# shrunk (" << config_name(r.config)
                      << "): " << run_case(small, {r.config}).at(0).detail << "\n"
                      << print_program(small) << std::flush;
          }
        }
        ok = false;
        break;
    }
  }
  if (results.at(0).verdict == Verdict::kEagerInvalid) {
    ++t.eager_invalid;
    if (print) std::cout << "# eager raises: " << results[0].detail << "\n";
  }
  return ok;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int usage(const std::string& why) {
  std::cerr << "training_fuzz: " << why
            << "\nusage: training_fuzz (--seeds=A:B | --seed=N | --replay=FILE | --bug-shape=NAME)"
               " [--shrink] [--print] [--strict] [--configs=all]\n";
  return 2;
}

}  // namespace
}  // namespace aotgrad::fuzz

int main(int argc, char** argv) {
  using namespace aotgrad::fuzz;
  ::setenv("AOTGRAD_CACHE_DIR", "off", /*overwrite=*/0);
  uint64_t first = 0, last = 0;
  bool shrink_it = false, print = false, every_config = false, by_seed = false, strict = false;
  std::string replay, shape;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      const std::string f = flag;
      if (a.rfind(f, 0) == 0) return a.substr(f.size());
      return std::nullopt;
    };
    try {
      if (auto v = value("--seeds=")) {
        size_t colon = v->find(':');
        if (colon == std::string::npos) return usage("--seeds takes A:B");
        first = std::stoull(v->substr(0, colon));
        last = std::stoull(v->substr(colon + 1));
        by_seed = true;
      } else if (auto v = value("--seed=")) {
        first = std::stoull(*v);
        last = first + 1;
        by_seed = true;
      } else if (auto v = value("--replay=")) {
        replay = *v;
      } else if (auto v = value("--bug-shape=")) {
        shape = *v;
      } else if (a == "--configs=all") {
        every_config = true;
      } else if (a == "--strict") {
        strict = true;
      } else if (a == "--shrink") {
        shrink_it = true;
      } else if (a == "--print") {
        print = true;
      } else {
        return usage("unknown argument '" + a + "'");
      }
    } catch (const std::exception&) {
      return usage("bad number in '" + a + "'");
    }
  }
  if (by_seed + !replay.empty() + !shape.empty() != 1)
    return usage("give one of --seeds, --seed, --replay, --bug-shape");
  const auto start = std::chrono::steady_clock::now();
  Totals t;
  bool ok = true;
  try {
    if (!replay.empty()) {
      ok = run_one(replay, parse_program(read_file(replay)), all_configs(), shrink_it, print,
                   strict, t);
    } else if (!shape.empty()) {
      ok = run_one(shape, bug_shape(shape), all_configs(), shrink_it, print, strict, t);
    } else {
      for (uint64_t s = first; s < last; ++s) {
        const Program p = generate(s);
        ok &=
            run_one("seed " + std::to_string(s), p,
                    every_config ? all_configs() : sample_configs(s), shrink_it, print, strict, t);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "training_fuzz: " << e.what() << "\n";
    return 2;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream raised;
  for (const auto& [k, n] : t.raised_by) raised << (raised.tellp() ? ", " : "") << k << " " << n;
  std::ostringstream known;
  int64_t num_known = 0;
  for (const auto& [k, n] : t.known_by) {
    known << (known.tellp() ? ", " : "") << k << " " << n;
    num_known += n;
  }
  std::printf(
      "training_fuzz: cases %lld (eager raises %lld), runs %lld: matched %lld (bitwise %lld), "
      "raised %lld [%s], known issues %lld [%s], mismatches %lld, %.1f s\n",
      static_cast<long long>(t.cases), static_cast<long long>(t.eager_invalid),
      static_cast<long long>(t.runs), static_cast<long long>(t.matched),
      static_cast<long long>(t.bitwise), static_cast<long long>(t.raised), raised.str().c_str(),
      static_cast<long long>(num_known), known.str().c_str(), static_cast<long long>(t.mismatches),
      seconds);
  return ok && t.mismatches == 0 ? 0 : 1;
}

// aotgrad: AOTGRAD_LOGS.
#include "aotgrad/support/logging.h"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>

#include "aotgrad/support/error.h"

namespace aotgrad {
namespace {

struct LogState {
  std::once_flag parsed;
  LogSettings settings;
  std::optional<std::string> error;  // AOTGRAD_LOGS could not be parsed
  std::ostream* stream = nullptr;
  std::mutex write_mu;
};

LogState& state() {
  static LogState s;
  return s;
}

void parse_env(LogState& s) {
  const char* env = std::getenv("AOTGRAD_LOGS");
  if (!env) return;
  try {
    s.settings = parse_log_settings(env);
  } catch (const Error& e) {
    s.error = "AOTGRAD_LOGS: " + e.message();
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

const std::vector<std::string>& log_artifact_names() {
  static const std::vector<std::string> names = {
      "aot_joint_graph", "aot_graphs", "partitioner", "cache", "recompiles", "collectives", "all"};
  return names;
}

LogSettings parse_log_settings(std::string_view spec) {
  LogSettings s;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view name = trim(spec.substr(pos, comma - pos));
    pos = comma + 1;
    if (!name.empty() && name.front() == '+') name.remove_prefix(1);
    if (name.empty()) continue;
    if (name == "aot_joint_graph") {
      s.joint_graph = true;
    } else if (name == "aot_graphs") {
      s.graphs = true;
    } else if (name == "partitioner") {
      s.partitioner = true;
    } else if (name == "cache") {
      s.cache = true;
    } else if (name == "recompiles") {
      s.recompiles = true;
    } else if (name == "collectives") {
      s.collectives = true;
    } else if (name == "all") {
      s.joint_graph = s.graphs = s.partitioner = s.cache = s.recompiles = s.collectives = true;
    } else {
      std::string valid;
      for (const std::string& n : log_artifact_names()) valid += (valid.empty() ? "" : ", ") + n;
      throw Error("unknown log name '" + std::string(name) + "'; valid names: " + valid +
                  " (comma-separated, '+' prefix allowed)");
    }
  }
  return s;
}

const LogSettings& log_settings() {
  LogState& s = state();
  std::call_once(s.parsed, parse_env, s);
  if (s.error) throw Error(*s.error);
  return s.settings;
}

void set_log_settings(const LogSettings& settings) {
  LogState& s = state();
  std::call_once(s.parsed, [] {});
  s.settings = settings;
  s.error.reset();
}

void set_log_stream(std::ostream* os) { state().stream = os; }

void log_text(const std::string& text) {
  LogState& s = state();
  std::lock_guard<std::mutex> lock(s.write_mu);
  std::ostream& os = s.stream ? *s.stream : std::cerr;
  os << text;
  if (text.empty() || text.back() != '\n') os << '\n';
  os.flush();
}

int next_aot_id() {
  static std::atomic<int> next{0};
  return next++;
}

}  // namespace aotgrad

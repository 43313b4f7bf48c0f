// aotgrad: command-line plumbing shared by the subcommands (options, exit codes, file reading).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace aotgrad::cli {

/// Exit codes of every command.
inline constexpr int kOk = 0;
inline constexpr int kBadInput = 1;
inline constexpr int kBadUsage = 2;

/// Thrown for a malformed command line; main prints it with the command's usage, exit 2.
struct UsageError {
  std::string message;
};

struct OptionSpec {
  std::string name;  // without dashes: "stats"
  bool takes_value;  // --name=VALUE or --name VALUE
  std::string help;  // one line
  std::string value_name = "VALUE";
};

struct CommandSpec {
  std::string name;      // "check"
  std::string synopsis;  // "aotgrad check FILE"
  std::string summary;   // one line
  std::vector<OptionSpec> options;
  int min_positional = 0;
  int max_positional = 0;
};

/// A parsed command line: positional arguments and options (flags map to "").
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;
  bool has(const std::string& name) const { return options.count(name) > 0; }
  std::optional<std::string> get(const std::string& name) const;
};

/// Parses argv after the command name against `spec`; `--help` sets options["help"].
/// Throws UsageError on unknown options, missing values or a wrong positional count.
Args parse_args(const CommandSpec& spec, const std::vector<std::string>& argv);
/// The --help text of a command.
std::string help_text(const CommandSpec& spec);

/// Reads a whole file, or standard input for "-" and "/dev/stdin". Throws aotgrad::Error naming the
/// file when it cannot be read. (Files are written with aotgrad::write_file_atomic.)
std::string read_input(const std::string& path);

}  // namespace aotgrad::cli

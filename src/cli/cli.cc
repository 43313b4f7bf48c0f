// aotgrad: command-line option parsing and file reading.
#include "cli.h"

#include <iostream>
#include <iterator>
#include <sstream>

#include "aotgrad/support/error.h"
#include "aotgrad/support/file.h"

namespace aotgrad::cli {

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = options.find(name);
  if (it == options.end()) return std::nullopt;
  return it->second;
}

Args parse_args(const CommandSpec& spec, const std::vector<std::string>& argv) {
  Args args;
  bool only_positional = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (only_positional || a.size() < 2 || a[0] != '-' || a == "-") {
      args.positional.push_back(a);
      continue;
    }
    if (a == "--") {
      only_positional = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      args.options["help"] = "";
      continue;
    }
    if (a.rfind("--", 0) != 0) throw UsageError{"unknown option '" + a + "'"};
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const OptionSpec* opt = nullptr;
    for (auto& o : spec.options)
      if (o.name == name) opt = &o;
    if (!opt) throw UsageError{"unknown option '--" + name + "'"};
    if (opt->takes_value && !has_value) {
      if (i + 1 >= argv.size()) throw UsageError{"option '--" + name + "' needs a value"};
      value = argv[++i];
    } else if (!opt->takes_value && has_value) {
      throw UsageError{"option '--" + name + "' takes no value"};
    }
    args.options[name] = value;
  }
  if (args.has("help")) return args;
  int n = static_cast<int>(args.positional.size());
  if (n < spec.min_positional) throw UsageError{"missing argument: " + spec.synopsis};
  if (n > spec.max_positional)
    throw UsageError{"unexpected argument '" + args.positional[spec.max_positional] + "'"};
  return args;
}

std::string help_text(const CommandSpec& spec) {
  std::ostringstream os;
  os << "usage: " << spec.synopsis << "\n\n" << spec.summary << "\n";
  if (!spec.options.empty()) os << "\noptions:\n";
  for (auto& o : spec.options) {
    std::string flag = "--" + o.name + (o.takes_value ? "=" + o.value_name : "");
    // The help starts in column 30; a flag that reaches it puts its help on the next line.
    os << "  " << flag;
    if (flag.size() >= 28) os << "\n" << std::string(2, ' ');
    for (size_t pad = flag.size() >= 28 ? 0 : flag.size(); pad < 28; ++pad) os << ' ';
    os << o.help << "\n";
  }
  os << "  --help                      show this help\n";
  os << "\nexit status: 0 success, 1 bad input, 2 bad usage\n";
  return os.str();
}

std::string read_input(const std::string& path) {
  if (path == "-" || path == "/dev/stdin")
    return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
  return read_file(path);
}

}  // namespace aotgrad::cli

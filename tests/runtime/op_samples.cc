// aotgrad: reader for the op-sample files (tests/data/op_samples/*.txt) shared by the registry
// sweeps.
#include "op_samples.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "aotgrad/ir/dtype.h"
#include "aotgrad/ir/error.h"

namespace aotgrad::op_samples {
namespace {

namespace fs = std::filesystem;

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Drops a trailing `# comment` outside quotes.
std::string strip_comment(const std::string& s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#') {
      return trim(s.substr(0, i));
    }
  }
  return s;
}

// Parses `[1, 2, 3]` at s[i] (i at '['); advances i past ']'.
std::vector<int64_t> parse_int_list(const std::string& s, size_t& i) {
  size_t close = s.find(']', i);
  if (close == std::string::npos) throw Error("missing ']' in a tensor annotation");
  std::vector<int64_t> out;
  std::string inner = s.substr(i + 1, close - i - 1);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::string t = trim(item);
    if (t.empty()) {
      if (out.empty() && trim(inner).empty()) break;
      throw Error("empty element in '[" + inner + "]'");
    }
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != t.size())
      throw Error("expected an integer in a tensor annotation, got '" + t + "'");
    out.push_back(v);
  }
  i = close + 1;
  return out;
}

// Reads a tensor token starting at s[i] (the dtype name), e.g. `f32[4, 5][1, 4]{0:3}`.
TensorSpec parse_tensor_token(const std::string& s, size_t& i, ScalarType dtype) {
  while (i < s.size() && is_ident_char(s[i])) ++i;
  TensorSpec spec;
  spec.meta.dtype = dtype;
  std::vector<int64_t> sizes = parse_int_list(s, i);
  for (int64_t v : sizes) {
    if (v < 0) throw Error("negative size in a tensor annotation");
    spec.meta.sizes.push_back(v);
  }
  if (i < s.size() && s[i] == '[') {
    std::vector<int64_t> strides = parse_int_list(s, i);
    if (strides.size() != sizes.size())
      throw Error("a tensor annotation has " + std::to_string(sizes.size()) + " sizes but " +
                  std::to_string(strides.size()) + " strides");
    for (int64_t v : strides) {
      if (v < 0) throw Error("negative stride in a tensor annotation");
      spec.meta.strides.push_back(v);
    }
  } else {
    spec.meta.strides = contiguous_strides(spec.meta.sizes);
  }
  if (i < s.size() && s[i] == '{') {
    size_t close = s.find('}', i);
    size_t colon = s.find(':', i);
    if (close == std::string::npos || colon == std::string::npos || colon > close)
      throw Error("expected a value range such as {0:10}");
    try {
      double lo = std::stod(s.substr(i + 1, colon - i - 1));
      double hi = std::stod(s.substr(colon + 1, close - colon - 1));
      if (!(lo < hi)) throw Error("empty value range");
      spec.range = {lo, hi};
    } catch (const std::invalid_argument&) {
      throw Error("expected numbers in a value range such as {0:10}");
    }
    i = close + 1;
  }
  return spec;
}

}  // namespace

fs::path samples_dir() { return fs::path(AOTGRAD_TEST_DATA) / "op_samples"; }

std::vector<fs::path> sample_files() {
  std::vector<fs::path> out;
  if (!fs::is_directory(samples_dir())) return out;
  for (auto& e : fs::directory_iterator(samples_dir()))
    if (e.path().extension() == ".txt") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

Sample parse_sample(const std::string& text) {
  Sample s;
  s.text = text;
  size_t open = text.find('(');
  if (open == std::string::npos || text.back() != ')') throw Error("expected <op>(<arguments>)");
  s.op_name = trim(text.substr(0, open));
  if (s.op_name.empty()) throw Error("missing op name before '('");
  std::string in = text.substr(open + 1, text.size() - open - 2);
  std::string out;
  char quote = 0;
  for (size_t i = 0; i < in.size();) {
    char c = in[i];
    if (quote) {
      out += c;
      if (c == '\\' && i + 1 < in.size())
        out += in[++i];
      else if (c == quote)
        quote = 0;
      ++i;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      out += c;
      ++i;
      continue;
    }
    bool word_start = is_ident_char(c) && !std::isdigit(static_cast<unsigned char>(c)) &&
                      (i == 0 || (!is_ident_char(in[i - 1]) && in[i - 1] != '.'));
    if (word_start) {
      size_t j = i;
      while (j < in.size() && is_ident_char(in[j])) ++j;
      std::string word = in.substr(i, j - i);
      auto dtype = scalar_type_from_short_name(word);
      if (dtype && j < in.size() && in[j] == '[') {
        out += "t" + std::to_string(s.tensors.size());
        s.tensors.push_back(parse_tensor_token(in, i, *dtype));
        continue;
      }
      out += word;
      i = j;
      continue;
    }
    out += c;
    ++i;
  }
  if (quote) throw Error("unterminated string");
  s.args = out;
  return s;
}

SampleFile read_sample_file(const fs::path& path) {
  SampleFile f;
  f.path = path;
  std::ifstream in(path);
  if (!in) {
    f.errors.push_back({0, "cannot open the file"});
    return f;
  }
  std::string raw;
  int line_no = 0;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    line = strip_comment(line);
    if (line.rfind("@skip", 0) == 0) {
      std::string rest = trim(line.substr(5));
      size_t colon = rest.find(": ");  // not the "::" of a namespace
      Skip sk;
      sk.line = line_no;
      sk.op_name = trim(rest.substr(0, colon));
      sk.reason = colon == std::string::npos ? "" : trim(rest.substr(colon + 1));
      if (sk.op_name.empty() || sk.reason.empty()) {
        f.errors.push_back({line_no, "expected '@skip <op>: <reason>'"});
        continue;
      }
      f.skips.push_back(sk);
      continue;
    }
    bool must_fail = line[0] == '!';
    bool crashes = line.rfind("!!", 0) == 0;
    if (must_fail) line = trim(line.substr(crashes ? 2 : 1));
    try {
      Sample s = parse_sample(line);
      s.line = line_no;
      s.must_fail = must_fail;
      s.libtorch_crashes = crashes;
      f.samples.push_back(std::move(s));
    } catch (const Error& e) {
      f.errors.push_back({line_no, e.message()});
    }
  }
  return f;
}

std::string graph_text(const Sample& s, const std::string& op_short_name,
                       const std::string& result_annotation, size_t returns) {
  std::string t = "def forward(self";
  for (size_t i = 0; i < s.tensors.size(); ++i)
    t += ", t" + std::to_string(i) + ": \"" + s.tensors[i].meta.annotation() + "\"";
  t += "):\n    result";
  if (!result_annotation.empty()) t += ": \"" + result_annotation + "\"";
  // The op's namespace ("_c10d_functional::all_reduce"), aten by default.
  size_t ns_end = s.op_name.find("::");
  std::string ns = ns_end == std::string::npos ? "aten" : s.op_name.substr(0, ns_end);
  t += " = torch.ops." + ns + "." + op_short_name + "(" + s.args + ")\n";
  if (returns <= 1) return t + "    return (result,)\n";
  std::string ret;
  for (size_t i = 0; i < returns; ++i) {
    std::string r = "r" + std::to_string(i);
    t += "    " + r + " = result[" + std::to_string(i) + "]\n";
    ret += (i ? ", " : "") + r;
  }
  return t + "    return (" + ret + ")\n";
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string camel(const std::string& stem) {
  std::string out;
  bool up = true;
  for (char c : stem) {
    if (c == '_' || c == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    up = false;
  }
  return out;
}

}  // namespace aotgrad::op_samples

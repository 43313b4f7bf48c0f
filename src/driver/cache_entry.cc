// aotgrad: the compile cache's entry text -- writing it and reading it back.
#include "aotgrad/driver/cache_entry.h"

#include <sstream>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/quote.h"
#include "aotgrad/support/sha256.h"

namespace aotgrad {
namespace {

// --- entry text ---------------------------------------------------------------------------------

const char* output_kind_name(OutputKind k) {
  switch (k) {
    case OutputKind::kFresh: return "fresh";
    case OutputKind::kIsInput: return "is_input";
    case OutputKind::kAliasOfInput: return "alias_of_input";
    case OutputKind::kNone: return "none";
  }
  return "?";
}

template <typename T>
std::string int_list_line(const char* name, const std::vector<T>& v) {
  std::string s = std::string(name) + " " + std::to_string(v.size());
  for (const T& x : v) s += " " + std::to_string(static_cast<int64_t>(x));
  return s + "\n";
}

void write_meta(std::string& out, const ViewAndMutationMeta& meta) {
  out += "inputs " + std::to_string(meta.inputs.size()) + "\n";
  for (const InputInfo& in : meta.inputs)
    out += "input " + std::to_string(in.mutates_data) + " " + std::to_string(in.mutates_metadata) +
           " " + std::to_string(in.mutation_in_graph) + " " + std::to_string(in.requires_grad) +
           " " + std::to_string(in.view) + " " + std::to_string(in.mutations_hidden_from_autograd) +
           "\n";
  out += "outputs " + std::to_string(meta.outputs.size()) + "\n";
  for (const OutputInfo& o : meta.outputs)
    out += std::string("output ") + output_kind_name(o.kind) + " " + std::to_string(o.input) + " " +
           std::to_string(o.view) + " " + std::to_string(o.grad_fn_from_base) + "\n";
  out += int_list_line("mutated_inputs_returned", meta.mutated_inputs_returned);
  out += "tokens " + std::to_string(meta.num_tokens) + "\n";
}

void write_graph(std::string& out, const char* name, const Graph& g) {
  std::string text = print_graph(g);
  out += std::string("graph ") + name + " " + std::to_string(text.size()) + "\n" + text;
  std::vector<int64_t> rg;
  std::vector<Node*> phs = g.placeholders();
  for (size_t i = 0; i < phs.size(); ++i)
    if (phs[i]->meta().is_tensor() && phs[i]->meta().tensor.requires_grad)
      rg.push_back(static_cast<int64_t>(i));
  out += int_list_line("requires_grad", rg);
}

std::string header(const char* kind, const std::string& key, std::string_view version) {
  return "aotgrad-compile-cache " + std::to_string(kCompileCacheFormat) + " " + kind + " " + key +
         "\naotgrad " + std::string(version) + "\n";
}

std::string with_trailer(std::string body) {
  std::string sum = sha256_hex(body);
  return body + "sha256 " + sum + "\n";
}

// Reads an entry line by line; every error says which line and what was expected.
class EntryReader {
 public:
  explicit EntryReader(std::string_view body) : text_(body) {}

  // The next line split on spaces; its first word must be `name`.
  std::vector<std::string> line(const char* name) {
    if (pos_ >= text_.size()) fail(std::string("ends where '") + name + "' was expected");
    size_t nl = text_.find('\n', pos_);
    if (nl == std::string_view::npos) fail("line without a newline");
    std::string_view l = text_.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    ++line_no_;
    std::vector<std::string> words;
    std::istringstream is{std::string(l)};
    for (std::string w; is >> w;) words.push_back(w);
    if (words.empty() || words[0] != name)
      fail(std::string("expected '") + name + "', found " + quote_bytes(l));
    return words;
  }

  int64_t to_int(const std::string& w) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(w, &used);
    } catch (...) {
      used = 0;
    }
    if (used != w.size() || w.empty()) fail("'" + escape_bytes(w) + "' is not an integer");
    return v;
  }

  // "<name> <n> <items>...": the items as integers.
  std::vector<int64_t> int_list(const char* name) {
    std::vector<std::string> w = line(name);
    if (w.size() < 2) fail(std::string("'") + name + "' without a count");
    int64_t n = to_int(w[1]);
    if (n < 0 || static_cast<size_t>(n) != w.size() - 2)
      fail(std::string("'") + name + "' says " + escape_bytes(w[1]) + " items, has " +
           std::to_string(w.size() - 2));
    std::vector<int64_t> out;
    for (size_t i = 2; i < w.size(); ++i) out.push_back(to_int(w[i]));
    return out;
  }

  // "<name> <n>": one count.
  size_t count(const char* name, size_t words = 2) {
    std::vector<std::string> w = line(name);
    if (w.size() != words) fail(std::string("malformed '") + name + "' line");
    int64_t n = to_int(w[1]);
    if (n < 0 || n > 100000000) fail(std::string("bad count in '") + name + "'");
    return static_cast<size_t>(n);
  }

  std::vector<std::string> words(const char* name, size_t n) {
    std::vector<std::string> w = line(name);
    if (w.size() != n) fail(std::string("malformed '") + name + "' line");
    return w;
  }

  // "graph <name> <bytes>" and the text; parsed and verified, requires_grad restored.
  std::unique_ptr<Graph> graph(const char* name) {
    std::vector<std::string> w = line("graph");
    if (w.size() != 3 || w[1] != name) fail(std::string("expected graph '") + name + "'");
    int64_t bytes = to_int(w[2]);
    if (bytes < 0 || static_cast<size_t>(bytes) > text_.size() - pos_)
      fail(std::string("graph '") + name + "' is cut short");
    std::string_view g = text_.substr(pos_, static_cast<size_t>(bytes));
    pos_ += static_cast<size_t>(bytes);
    for (char c : g) line_no_ += c == '\n';
    std::unique_ptr<Graph> parsed;
    try {
      parsed = parse_graph(g, aten_ops());
      verify(*parsed);
    } catch (const Error& e) {
      fail(std::string("graph '") + name + "': " + e.formatted());
    }
    std::vector<Node*> phs = parsed->placeholders();
    for (int64_t i : int_list("requires_grad")) {
      if (i < 0 || static_cast<size_t>(i) >= phs.size() || !phs[i]->meta().is_tensor())
        fail(std::string("graph '") + name + "': requires_grad names no tensor placeholder");
      phs[i]->mutable_meta().tensor.requires_grad = true;
    }
    return parsed;
  }

  void end() {
    if (pos_ != text_.size()) fail("unexpected text after the last graph");
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("line " + std::to_string(line_no_) + ": " + what);
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_no_ = 0;
};

// Checks the header and the trailer; returns the body (everything before the trailer).
std::string_view check_envelope(std::string_view text, const char* kind, const std::string& key) {
  size_t nl = text.find('\n');
  std::string_view first = text.substr(0, nl == std::string_view::npos ? text.size() : nl);
  std::istringstream is{std::string(first)};
  std::string magic, format, k, entry_key, extra;
  is >> magic >> format >> k >> entry_key;
  if (magic != "aotgrad-compile-cache")
    throw Error("not a compile cache entry (the first line is not 'aotgrad-compile-cache ...')");
  if (format != std::to_string(kCompileCacheFormat))
    throw Error("entry format version '" + escape_bytes(format) + "'; this build reads version " +
                std::to_string(kCompileCacheFormat));
  if (nl == std::string_view::npos || text.empty() || text.back() != '\n')
    throw Error("truncated: the entry does not end with its sha256 line");
  size_t last = text.rfind('\n', text.size() - 2);
  size_t start = last == std::string_view::npos ? 0 : last + 1;
  std::string_view trailer = text.substr(start, text.size() - 1 - start);
  if (trailer.substr(0, 7) != "sha256 " || trailer.size() != 7 + 64)
    throw Error("truncated: the entry does not end with its sha256 line");
  std::string_view body = text.substr(0, start);
  if (sha256_hex(body) != trailer.substr(7))
    throw Error("checksum mismatch: the entry was changed or partly written");
  if (k != kind)
    throw Error("a " + escape_bytes(k) + " entry where a " + kind + " entry was expected");
  if (entry_key != key) throw Error("written for key " + escape_bytes(entry_key));
  if (is >> extra) throw Error("malformed first line");
  return body;
}

ViewAndMutationMeta read_meta(EntryReader& r) {
  ViewAndMutationMeta meta;
  size_t n_in = r.count("inputs");
  for (size_t i = 0; i < n_in; ++i) {
    std::vector<std::string> w = r.words("input", 7);
    InputInfo in;
    auto flag = [&](const std::string& s) {
      if (s != "0" && s != "1") r.fail("input flag '" + escape_bytes(s) + "' is not 0 or 1");
      return s == "1";
    };
    in.mutates_data = flag(w[1]);
    in.mutates_metadata = flag(w[2]);
    in.mutation_in_graph = flag(w[3]);
    in.requires_grad = flag(w[4]);
    in.view = static_cast<int>(r.to_int(w[5]));
    if (in.view < -1) r.fail("input view " + w[5] + " is not an index");
    in.mutations_hidden_from_autograd = flag(w[6]);
    meta.inputs.push_back(in);
  }
  size_t n_out = r.count("outputs");
  for (size_t i = 0; i < n_out; ++i) {
    std::vector<std::string> w = r.words("output", 5);
    OutputInfo o;
    if (w[1] == "fresh")
      o.kind = OutputKind::kFresh;
    else if (w[1] == "is_input")
      o.kind = OutputKind::kIsInput;
    else if (w[1] == "alias_of_input")
      o.kind = OutputKind::kAliasOfInput;
    else if (w[1] == "none")
      o.kind = OutputKind::kNone;
    else
      r.fail("unknown output kind '" + escape_bytes(w[1]) + "'");
    o.input = static_cast<int>(r.to_int(w[2]));
    o.view = static_cast<int>(r.to_int(w[3]));
    if (o.input < -1 || o.input >= static_cast<int>(meta.inputs.size()))
      r.fail("output names no input");
    if (o.input < 0 && (o.kind == OutputKind::kIsInput || o.kind == OutputKind::kAliasOfInput))
      r.fail("output " + w[1] + " names no input");
    if (o.view < -1) r.fail("output view " + w[3] + " is not an index");
    if (w[4] != "0" && w[4] != "1")
      r.fail("output flag '" + escape_bytes(w[4]) + "' is not 0 or 1");
    o.grad_fn_from_base = w[4] == "1";
    meta.outputs.push_back(o);
  }
  for (int64_t p : r.int_list("mutated_inputs_returned")) {
    if (p < 0 || static_cast<size_t>(p) >= meta.inputs.size())
      r.fail("mutated_inputs_returned names no input");
    meta.mutated_inputs_returned.push_back(static_cast<int>(p));
  }
  size_t tokens = r.count("tokens");
  if (tokens > 1) r.fail("tokens holds " + std::to_string(tokens) + " (at most 1)");
  meta.num_tokens = static_cast<int>(tokens);
  return meta;
}

// The runtime takes one input per placeholder of the input views graph, and the views the
// metadata names from its outputs.
void check_input_views(const ViewAndMutationMeta& meta, const Graph& input_views) {
  size_t n_inputs = input_views.placeholders().size();
  if (meta.inputs.size() != n_inputs)
    throw Error("the metadata describes " + std::to_string(meta.inputs.size()) +
                " inputs, the input views graph takes " + std::to_string(n_inputs));
  const Node* out = input_views.output();
  const int n_views = out->args().empty() ? 0 : static_cast<int>(out->args()[0].list.size());
  auto check = [&](int view, const std::string& what) {
    if (view >= n_views)
      throw Error(what + " names view " + std::to_string(view) +
                  "; the input views graph returns " + std::to_string(n_views));
  };
  for (size_t i = 0; i < meta.inputs.size(); ++i)
    check(meta.inputs[i].view, "input " + std::to_string(i));
  for (size_t j = 0; j < meta.outputs.size(); ++j)
    check(meta.outputs[j].view, "output " + std::to_string(j));
}

}  // namespace

std::string serialize_cache_entry(const std::string& key, std::string_view version,
                                  const CompileState& s) {
  AOTGRAD_CHECK(s.input_views, "compile cache: a compilation without its input views graph");
  const char* kind = s.kind == CompileKind::kTraining ? "training" : "inference";
  AOTGRAD_CHECK(s.kind != CompileKind::kExport, "compile cache: exports are not cached");
  std::string out = header(kind, key, version);
  write_meta(out, s.meta);
  if (s.kind == CompileKind::kTraining) {
    AOTGRAD_CHECK(s.fw && s.bw, "compile cache: a training compilation without its graphs");
    out += "num_forward_outputs " + std::to_string(s.num_forward_outputs) + "\n";
    out += "saved " + std::to_string(s.saved.size());
    for (const std::string& name : s.saved) {
      AOTGRAD_CHECK(!name.empty() && name.find_first_of(" \t\n") == std::string::npos,
                    "compile cache: saved value name '", name, "' cannot be stored");
      out += " " + name;
    }
    out += "\n";
    const JointGraph& j = s.joint;
    out += "joint " + std::to_string(j.num_primals) + " " + std::to_string(j.num_tangents) + " " +
           std::to_string(j.num_forward_outputs) + " " + std::to_string(j.num_tokens) + "\n";
    out += int_list_line("tangent_of_output", j.tangent_of_output);
    out += int_list_line("primal_requires_grad", j.primal_requires_grad);
    out += int_list_line("leaf_output", j.leaf_output);
    write_graph(out, "fw", *s.fw);
    write_graph(out, "bw", *s.bw);
  } else {
    AOTGRAD_CHECK(s.graph, "compile cache: an inference compilation without its graph");
    write_graph(out, "fw", *s.graph);
  }
  write_graph(out, "input_views", *s.input_views);
  return with_trailer(std::move(out));
}

void parse_cache_entry(std::string_view text, const std::string& key, CompileState& s) {
  AOTGRAD_CHECK(s.kind != CompileKind::kExport, "compile cache: exports are not cached");
  bool training = s.kind == CompileKind::kTraining;
  EntryReader r(check_envelope(text, training ? "training" : "inference", key));
  r.line("aotgrad-compile-cache");
  r.words("aotgrad", 2);
  s.meta = read_meta(r);
  if (!training) {
    std::unique_ptr<Graph> fw = r.graph("fw");
    s.input_views = r.graph("input_views");
    r.end();
    check_input_views(s.meta, *s.input_views);
    const Node* out = fw->output();
    size_t n = out->args().empty() ? 0 : out->args()[0].list.size();
    size_t described = static_cast<size_t>(s.meta.num_tokens) +
                       s.meta.mutated_inputs_returned.size() + s.meta.outputs.size();
    if (n != described)
      throw Error("the graph returns " + std::to_string(n) + " values, the metadata describes " +
                  std::to_string(described));
    s.graph = std::move(fw);
    return;
  }
  s.num_forward_outputs = r.count("num_forward_outputs");
  std::vector<std::string> saved = r.line("saved");
  if (saved.size() < 2 || r.to_int(saved[1]) != static_cast<int64_t>(saved.size() - 2))
    r.fail("'saved' count does not match its names");
  s.saved.assign(saved.begin() + 2, saved.end());
  std::vector<std::string> j = r.words("joint", 5);
  s.joint = JointGraph{};
  s.joint.num_primals = static_cast<size_t>(r.to_int(j[1]));
  s.joint.num_tangents = static_cast<size_t>(r.to_int(j[2]));
  s.joint.num_forward_outputs = static_cast<size_t>(r.to_int(j[3]));
  s.joint.num_tokens = static_cast<size_t>(r.to_int(j[4]));
  if (s.joint.num_tokens != static_cast<size_t>(s.meta.num_tokens))
    r.fail("the joint graph's tokens differ from the metadata's");
  for (int64_t t : r.int_list("tangent_of_output"))
    s.joint.tangent_of_output.push_back(static_cast<int>(t));
  for (int64_t b : r.int_list("primal_requires_grad")) {
    if (b != 0 && b != 1) r.fail("primal_requires_grad holds " + std::to_string(b));
    s.joint.primal_requires_grad.push_back(b == 1);
  }
  for (int64_t b : r.int_list("leaf_output")) {
    if (b != 0 && b != 1) r.fail("leaf_output holds " + std::to_string(b));
    s.joint.leaf_output.push_back(b == 1);
  }
  std::unique_ptr<Graph> fw = r.graph("fw");
  std::unique_ptr<Graph> bw = r.graph("bw");
  s.input_views = r.graph("input_views");
  r.end();
  check_input_views(s.meta, *s.input_views);
  // What the runtime relies on: the forward returns its outputs and then the saved values, and
  // every forward output has a tangent slot.
  const Node* out = fw->output();
  size_t n_fw_out = out->args().empty() ? 0 : out->args()[0].list.size();
  if (n_fw_out != s.num_forward_outputs + s.saved.size())
    throw Error("the forward graph returns " + std::to_string(n_fw_out) +
                " values, the entry says " + std::to_string(s.num_forward_outputs) +
                " outputs and " + std::to_string(s.saved.size()) + " saved");
  auto one_per_output = [&](const char* line, size_t entries) {
    if (entries != s.num_forward_outputs)
      throw Error(std::string(line) + " has " + std::to_string(entries) + " entries for " +
                  std::to_string(s.num_forward_outputs) + " forward outputs");
  };
  one_per_output("tangent_of_output", s.joint.tangent_of_output.size());
  one_per_output("leaf_output", s.joint.leaf_output.size());
  if (static_cast<size_t>(s.meta.num_tokens) + s.meta.mutated_inputs_returned.size() +
          s.meta.outputs.size() <
      s.num_forward_outputs)
    throw Error("the metadata describes fewer outputs than the forward graph returns");
  s.fw = std::move(fw);
  s.bw = std::move(bw);
}

}  // namespace aotgrad

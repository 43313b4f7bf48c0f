// aotgrad: the on-disk compile cache -- keys, the entry text format, atomic writes, counters.
#include "aotgrad/transforms/compile_cache.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "aotgrad/support/file.h"
#include "aotgrad/support/logging.h"
#include "aotgrad/support/sha256.h"

namespace aotgrad {
namespace {

// --- counters and one-time warnings -------------------------------------------------------------

struct Counters {
  std::atomic<int64_t> hits{0}, misses{0}, corrupt{0}, saved{0}, bypasses{0};
};
Counters& counters() {
  static Counters c;
  return c;
}

// Directories already reported as unusable (each is reported once per process).
bool first_report_of(const std::string& what) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  return seen.insert(what).second;
}

void warn(const std::string& text) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::cerr << "aotgrad: warning: " << text << "\n";
  std::cerr.flush();
}

void log_cache(const std::string& text) {
  if (log_settings().cache) log_text("aotgrad cache: " + text);
}

// --- key material -------------------------------------------------------------------------------

const char* policy_name(RecomputePolicy p) {
  switch (p) {
    case RecomputePolicy::None: return "none";
    case RecomputePolicy::MustSave: return "must_save";
    case RecomputePolicy::PreferSave: return "prefer_save";
    case RecomputePolicy::MustRecompute: return "must_recompute";
    case RecomputePolicy::PreferRecompute: return "prefer_recompute";
  }
  return "?";
}

std::string exact_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The graph's text, and what the text does not show but a compilation reads: recompute tags and
// placeholders' requires_grad.
void append_graph(std::string& out, const Graph& g) {
  std::string text = print_graph(g);
  out += "graph " + std::to_string(text.size()) + "\n" + text;
  out += "tags";
  for (const Node* n : g.nodes())
    if (n->info().recompute != RecomputePolicy::None)
      out += " " + n->name() + "=" + policy_name(n->info().recompute);
  out += "\nplaceholder_requires_grad";
  for (const Node* n : g.placeholders())
    out += n->meta().is_tensor() && n->meta().tensor.requires_grad ? " 1" : " 0";
  out += "\n";
}

void append_decompositions(std::string& out, const DecompositionTable& t) {
  out += "decompositions " + std::to_string(t.ops.size());
  for (const std::string& op : t.ops) out += " " + op;  // std::set: sorted
  out += "\n";
}

// Size and modification time of a file, "" when it cannot be read.
std::string file_identity(const char* path) {
  struct stat st {};
  if (::stat(path, &st) != 0) return "";
  return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

void append_common(std::string& out, const char* kind, std::string_view version) {
  out += "aotgrad compile cache key\nformat " + std::to_string(kCompileCacheFormat) + "\nkind " +
         kind + "\nversion " + std::string(version) + "\nbuild " + compile_cache_build_id() +
         "\nregistry " + op_registry_fingerprint() + "\n";
}

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
           " " + std::to_string(in.view) + "\n";
  out += "outputs " + std::to_string(meta.outputs.size()) + "\n";
  for (const OutputInfo& o : meta.outputs)
    out += std::string("output ") + output_kind_name(o.kind) + " " + std::to_string(o.input) + " " +
           std::to_string(o.view) + "\n";
  out += int_list_line("mutated_inputs_returned", meta.mutated_inputs_returned);
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
      fail(std::string("expected '") + name + "', found '" + std::string(l.substr(0, 60)) + "'");
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
    if (used != w.size() || w.empty()) fail("'" + w + "' is not an integer");
    return v;
  }

  // "<name> <n> <items>...": the items as integers.
  std::vector<int64_t> int_list(const char* name) {
    std::vector<std::string> w = line(name);
    if (w.size() < 2) fail(std::string("'") + name + "' without a count");
    int64_t n = to_int(w[1]);
    if (n < 0 || static_cast<size_t>(n) != w.size() - 2)
      fail(std::string("'") + name + "' says " + w[1] + " items, has " +
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
  std::shared_ptr<const Graph> graph(const char* name) {
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
    return std::shared_ptr<const Graph>(std::move(parsed));
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
    throw Error("entry format version '" + format + "'; this build reads version " +
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
  if (k != kind) throw Error("a " + k + " entry where a " + kind + " entry was expected");
  if (entry_key != key) throw Error("written for key " + entry_key);
  if (is >> extra) throw Error("malformed first line");
  return body;
}

ViewAndMutationMeta read_meta(EntryReader& r) {
  ViewAndMutationMeta meta;
  size_t n_in = r.count("inputs");
  for (size_t i = 0; i < n_in; ++i) {
    std::vector<std::string> w = r.words("input", 6);
    InputInfo in;
    auto flag = [&](const std::string& s) {
      if (s != "0" && s != "1") r.fail("input flag '" + s + "' is not 0 or 1");
      return s == "1";
    };
    in.mutates_data = flag(w[1]);
    in.mutates_metadata = flag(w[2]);
    in.mutation_in_graph = flag(w[3]);
    in.requires_grad = flag(w[4]);
    in.view = static_cast<int>(r.to_int(w[5]));
    meta.inputs.push_back(in);
  }
  size_t n_out = r.count("outputs");
  for (size_t i = 0; i < n_out; ++i) {
    std::vector<std::string> w = r.words("output", 4);
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
      r.fail("unknown output kind '" + w[1] + "'");
    o.input = static_cast<int>(r.to_int(w[2]));
    o.view = static_cast<int>(r.to_int(w[3]));
    if (o.input >= static_cast<int>(meta.inputs.size())) r.fail("output names no input");
    meta.outputs.push_back(o);
  }
  for (int64_t p : r.int_list("mutated_inputs_returned")) {
    if (p < 0 || static_cast<size_t>(p) >= meta.inputs.size())
      r.fail("mutated_inputs_returned names no input");
    meta.mutated_inputs_returned.push_back(static_cast<int>(p));
  }
  return meta;
}

std::string elapsed_text(std::chrono::steady_clock::time_point t0) {
  return exact_double(
             std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                 .count()) +
         " ms";
}

}  // namespace

CompileCacheStats compile_cache_stats() {
  Counters& c = counters();
  return {c.hits.load(), c.misses.load(), c.corrupt.load(), c.saved.load(), c.bypasses.load()};
}

void reset_compile_cache_stats() {
  Counters& c = counters();
  c.hits = c.misses = c.corrupt = c.saved = c.bypasses = 0;
}

std::string default_compile_cache_dir() {
  if (const char* env = std::getenv("AOTGRAD_CACHE_DIR")) {
    std::string v = env;
    if (v.empty() || v == "off" || v == "0" || v == "false" || v == "none") return "";
    return v;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/aotgrad";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/aotgrad";
  return "";
}

std::string resolve_compile_cache_dir(const std::optional<std::string>& option) {
  if (!option) return default_compile_cache_dir();
  if (option->empty() || *option == "off") return "";
  return *option;
}

const std::string& compile_cache_build_id() {
  static const std::string id = [] {
    // The running executable, and the shared library holding this code when it is one.
    std::string out = file_identity("/proc/self/exe");
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&file_identity), &info) != 0 && info.dli_fname &&
        std::string_view(info.dli_fname).find(".so") != std::string_view::npos)
      out += " " + file_identity(info.dli_fname);
    return out;
  }();
  return id;
}

const std::string& op_registry_fingerprint() {
  static const std::string fp = [] {
    std::string all;
    for (const OpDef* op : aten_ops().all()) {
      all += op->schema.text + "|" + std::to_string(op->tags) + "|" + (op->meta ? "m" : "") +
             (op->derivative ? "d" : "") + (op->non_differentiable ? "n" : "") +
             (op->decomposition ? "x" : "") + "|" + op->functional_variant + "|" +
             op->inplace_variant + "|" + op->scatter_inverse + "\n";
    }
    return sha256_hex(all);
  }();
  return fp;
}

std::string training_cache_key(const Graph& graph, const std::vector<bool>& requires_grad,
                               const PipelineOptions& options, std::string_view version) {
  std::string m;
  append_common(m, "training", version);
  m += "requires_grad";
  for (bool b : requires_grad) m += b ? " 1" : " 0";
  m += std::string("\npartition ") +
       (options.partition == PartitionKind::kMinCut ? "min_cut" : "default") + "\n";
  append_decompositions(m, options.decompositions);
  if (options.partition == PartitionKind::kMinCut) {
    const MinCutOptions& o = options.min_cut;
    m += "min_cut ban_if_used_far_apart=" + std::to_string(o.ban_if_used_far_apart) +
         " ban_if_long_fusible_chains=" + std::to_string(o.ban_if_long_fusible_chains) +
         " ban_if_materialized_backward=" + std::to_string(o.ban_if_materialized_backward) +
         " ban_if_not_in_allowlist=" + std::to_string(o.ban_if_not_in_allowlist) +
         " ban_if_reduction=" + std::to_string(o.ban_if_reduction) +
         " max_dist_from_bw=" + std::to_string(o.max_dist_from_bw) +
         " recompute_views=" + std::to_string(o.recompute_views) +
         " treat_parameters_as_free_to_save=" + std::to_string(o.treat_parameters_as_free_to_save) +
         " cse=" + std::to_string(o.cse) +
         " recompute_random_ops=" + std::to_string(o.recompute_random_ops) +
         " activation_memory_budget=" + exact_double(o.activation_memory_budget) +
         " solver=" + std::string(knapsack_solver_name(o.memory_budget_solver)) +
         " static_lifetime_inputs=";
    for (bool b : o.static_lifetime_inputs) m += b ? "1" : "0";
    m += "\n";
  }
  append_graph(m, graph);
  return sha256_hex(m);
}

std::string inference_cache_key(const Graph& graph, bool keep_input_mutations,
                                const DecompositionTable& decompositions,
                                std::string_view version) {
  std::string m;
  append_common(m, "inference", version);
  m += "keep_inference_input_mutations " + std::to_string(keep_input_mutations) + "\n";
  append_decompositions(m, decompositions);
  append_graph(m, graph);
  return sha256_hex(m);
}

std::string serialize_training_entry(const std::string& key, std::string_view version,
                                     const TrainingArtifacts& a) {
  AOTGRAD_CHECK(a.fw && a.bw && a.input_views, "compile cache: training artifacts without graphs");
  std::string out = header("training", key, version);
  write_meta(out, a.meta);
  out += "num_forward_outputs " + std::to_string(a.num_forward_outputs) + "\n";
  out += "saved " + std::to_string(a.saved.size());
  for (const std::string& s : a.saved) {
    AOTGRAD_CHECK(!s.empty() && s.find_first_of(" \t\n") == std::string::npos,
                  "compile cache: saved value name '", s, "' cannot be stored");
    out += " " + s;
  }
  out += "\n";
  const JointGraph& j = a.joint_info;
  out += "joint " + std::to_string(j.num_primals) + " " + std::to_string(j.num_tangents) + " " +
         std::to_string(j.num_forward_outputs) + "\n";
  out += int_list_line("tangent_of_output", j.tangent_of_output);
  out += int_list_line("primal_requires_grad", j.primal_requires_grad);
  write_graph(out, "fw", *a.fw);
  write_graph(out, "bw", *a.bw);
  write_graph(out, "input_views", *a.input_views);
  return with_trailer(std::move(out));
}

std::string serialize_inference_entry(const std::string& key, std::string_view version,
                                      const InferenceArtifacts& a) {
  AOTGRAD_CHECK(a.fw && a.input_views, "compile cache: inference artifacts without graphs");
  std::string out = header("inference", key, version);
  write_meta(out, a.meta);
  write_graph(out, "fw", *a.fw);
  write_graph(out, "input_views", *a.input_views);
  return with_trailer(std::move(out));
}

TrainingArtifacts parse_training_entry(std::string_view text, const std::string& key) {
  EntryReader r(check_envelope(text, "training", key));
  r.line("aotgrad-compile-cache");
  r.words("aotgrad", 2);
  TrainingArtifacts a;
  a.meta = read_meta(r);
  a.num_forward_outputs = r.count("num_forward_outputs");
  std::vector<std::string> saved = r.line("saved");
  if (saved.size() < 2 || r.to_int(saved[1]) != static_cast<int64_t>(saved.size() - 2))
    r.fail("'saved' count does not match its names");
  a.saved.assign(saved.begin() + 2, saved.end());
  std::vector<std::string> j = r.words("joint", 4);
  a.joint_info.num_primals = static_cast<size_t>(r.to_int(j[1]));
  a.joint_info.num_tangents = static_cast<size_t>(r.to_int(j[2]));
  a.joint_info.num_forward_outputs = static_cast<size_t>(r.to_int(j[3]));
  for (int64_t t : r.int_list("tangent_of_output"))
    a.joint_info.tangent_of_output.push_back(static_cast<int>(t));
  for (int64_t b : r.int_list("primal_requires_grad")) {
    if (b != 0 && b != 1) r.fail("primal_requires_grad holds " + std::to_string(b));
    a.joint_info.primal_requires_grad.push_back(b == 1);
  }
  a.fw = r.graph("fw");
  a.bw = r.graph("bw");
  a.input_views = r.graph("input_views");
  r.end();
  // What the runtime relies on: the forward returns its outputs and then the saved values, and
  // every forward output has a tangent slot.
  const Node* out = a.fw->output();
  size_t n_fw_out = out->args().empty() ? 0 : out->args()[0].list.size();
  if (n_fw_out != a.num_forward_outputs + a.saved.size())
    throw Error("the forward graph returns " + std::to_string(n_fw_out) +
                " values, the entry says " + std::to_string(a.num_forward_outputs) +
                " outputs and " + std::to_string(a.saved.size()) + " saved");
  if (a.joint_info.tangent_of_output.size() != a.num_forward_outputs)
    throw Error("tangent_of_output has " + std::to_string(a.joint_info.tangent_of_output.size()) +
                " entries for " + std::to_string(a.num_forward_outputs) + " forward outputs");
  if (a.meta.mutated_inputs_returned.size() + a.meta.outputs.size() < a.num_forward_outputs)
    throw Error("the metadata describes fewer outputs than the forward graph returns");
  return a;
}

InferenceArtifacts parse_inference_entry(std::string_view text, const std::string& key) {
  EntryReader r(check_envelope(text, "inference", key));
  r.line("aotgrad-compile-cache");
  r.words("aotgrad", 2);
  InferenceArtifacts a;
  a.meta = read_meta(r);
  a.fw = r.graph("fw");
  a.input_views = r.graph("input_views");
  r.end();
  const Node* out = a.fw->output();
  size_t n = out->args().empty() ? 0 : out->args()[0].list.size();
  if (n != a.meta.mutated_inputs_returned.size() + a.meta.outputs.size())
    throw Error("the graph returns " + std::to_string(n) + " values, the metadata describes " +
                std::to_string(a.meta.mutated_inputs_returned.size() + a.meta.outputs.size()));
  return a;
}

CompileCache::CompileCache(std::string dir) : dir_(std::move(dir)) {
  AOTGRAD_CHECK(!dir_.empty(), "compile cache: empty directory name");
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  std::string cause;
  if (ec)
    cause = ec.message();
  else if (!std::filesystem::is_directory(dir_, ec))
    cause = "not a directory";
  else if (::access(dir_.c_str(), W_OK | X_OK) != 0)
    cause = std::strerror(errno);
  usable_ = cause.empty();
  if (!usable_ && first_report_of("dir " + dir_))
    warn("compile cache directory '" + dir_ + "' cannot be used (" + cause +
         "); compiling without the cache");
}

std::string CompileCache::entry_path(const std::string& key) const {
  return dir_ + "/" + key + ".entry";
}

bool CompileCache::usable() const { return usable_; }

std::optional<std::string> CompileCache::read_entry(const std::string& key) const {
  std::string path = entry_path(key);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (!in.good() && !in.eof()) return std::string();  // unreadable: reported as corrupt
  return ss.str();
}

void CompileCache::report_corrupt(const std::string& key, const std::string& cause) const {
  counters().corrupt++;
  warn("compile cache entry '" + entry_path(key) + "' is unusable: " + cause +
       "; recompiling and overwriting it");
  log_cache("corrupt entry " + entry_path(key) + ": " + cause);
}

bool CompileCache::load_entry(const std::string& key,
                              const std::function<void(const std::string&)>& parse) const {
  auto t0 = std::chrono::steady_clock::now();
  std::optional<std::string> text = usable_ ? read_entry(key) : std::nullopt;
  if (text) {
    try {
      parse(*text);
      counters().hits++;
      log_cache("hit for key " + key + " (" + entry_path(key) + ", " + elapsed_text(t0) + ")");
      return true;
    } catch (const Error& e) {
      report_corrupt(key, e.message());
    }
  }
  counters().misses++;
  log_cache("miss for key " + key);
  return false;
}

std::optional<TrainingArtifacts> CompileCache::load_training(const std::string& key) const {
  std::optional<TrainingArtifacts> a;
  load_entry(key, [&](const std::string& text) { a = parse_training_entry(text, key); });
  return a;
}

std::optional<InferenceArtifacts> CompileCache::load_inference(const std::string& key) const {
  std::optional<InferenceArtifacts> a;
  load_entry(key, [&](const std::string& text) { a = parse_inference_entry(text, key); });
  return a;
}

bool CompileCache::write_entry(const std::string& key, const std::string& text) const {
  if (!usable_) return false;
  std::string path = entry_path(key);
  try {
    write_file_atomic(path, text);
  } catch (const Error& e) {
    if (first_report_of("write " + dir_)) warn("compile cache: " + e.message());
    return false;
  }
  counters().saved++;
  log_cache("saved " + path);
  return true;
}

bool CompileCache::store_training(const std::string& key, std::string_view version,
                                  const TrainingArtifacts& a) const {
  return write_entry(key, serialize_training_entry(key, version, a));
}

bool CompileCache::store_inference(const std::string& key, std::string_view version,
                                   const InferenceArtifacts& a) const {
  return write_entry(key, serialize_inference_entry(key, version, a));
}

TrainingArtifacts compile_for_training_cached(const Graph& graph,
                                              const std::vector<bool>& requires_grad,
                                              const PipelineOptions& options,
                                              const std::string& cache_dir,
                                              std::string_view version, bool* hit, bool read) {
  if (hit) *hit = false;
  if (cache_dir.empty()) return compile_for_training(graph, requires_grad, options);
  CompileCache cache(cache_dir);
  if (!cache.usable()) {
    counters().bypasses++;
    log_cache("bypass: directory " + cache_dir + " cannot be used");
    return compile_for_training(graph, requires_grad, options);
  }
  auto t0 = std::chrono::steady_clock::now();
  std::string key = training_cache_key(graph, requires_grad, options, version);
  if (read) {
    if (std::optional<TrainingArtifacts> a = cache.load_training(key)) {
      a->phases_us.push_back({"cache_load", std::chrono::duration<double, std::micro>(
                                                std::chrono::steady_clock::now() - t0)
                                                .count()});
      if (hit) *hit = true;
      return std::move(*a);
    }
  } else {
    counters().bypasses++;
    log_cache("bypass for key " + key + ": the caller needs the joint graph");
  }
  TrainingArtifacts a = compile_for_training(graph, requires_grad, options);
  cache.store_training(key, version, a);
  return a;
}

namespace {

InferenceArtifacts compile_for_inference(const Graph& source, bool keep_input_mutations,
                                         const DecompositionTable& decompositions) {
  FunctionalizeOptions fopts;
  fopts.keep_input_mutations = keep_input_mutations;
  fopts.input_name = [](size_t i) { return "arg" + std::to_string(i) + "_1"; };
  FunctionalizeResult r = functionalize(source, fopts);
  verify(*r.graph);
  if (decompose(*r.graph, decompositions) > 0) verify(*r.graph);
  if (log_settings().graphs) log_graph("Forward graph " + std::to_string(next_aot_id()), *r.graph);
  return {std::shared_ptr<const Graph>(std::move(r.graph)), std::move(r.meta),
          std::shared_ptr<const Graph>(std::move(r.input_views))};
}

}  // namespace

InferenceArtifacts compile_for_inference_cached(const Graph& source, bool keep_input_mutations,
                                                const DecompositionTable& decompositions,
                                                const std::string& cache_dir,
                                                std::string_view version, bool* hit) {
  if (hit) *hit = false;
  if (cache_dir.empty()) return compile_for_inference(source, keep_input_mutations, decompositions);
  CompileCache cache(cache_dir);
  if (!cache.usable()) {
    counters().bypasses++;
    log_cache("bypass: directory " + cache_dir + " cannot be used");
    return compile_for_inference(source, keep_input_mutations, decompositions);
  }
  std::string key = inference_cache_key(source, keep_input_mutations, decompositions, version);
  if (std::optional<InferenceArtifacts> a = cache.load_inference(key)) {
    if (hit) *hit = true;
    return std::move(*a);
  }
  InferenceArtifacts a = compile_for_inference(source, keep_input_mutations, decompositions);
  cache.store_inference(key, version, a);
  return a;
}

}  // namespace aotgrad

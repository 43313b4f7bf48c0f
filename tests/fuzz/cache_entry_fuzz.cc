// aotgrad: libFuzzer target -- the compile cache's entries (the files of a --cache-dir), read by
// parse_cache_entry. The checksum trailer is written for the input's body, so the fuzzer reaches
// the reader's lines and graphs; the input as it is goes through the reader too (the envelope).
// An entry is read, or it is an Error; one that is read holds only indices the runtime can follow.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "aotgrad/driver/cache_entry.h"
#include "aotgrad/support/sha256.h"
#include "fuzz_check.h"

namespace {

using namespace aotgrad;

// The indices the runtime (CompiledGraph, CompiledFunction) follows without checking them again.
void check_indices(const CompileState& s) {
  const ViewAndMutationMeta& m = s.meta;
  const int n_inputs = static_cast<int>(m.inputs.size());
  fuzz::require(s.input_views->placeholders().size() == m.inputs.size(),
                "the metadata's inputs are not the input views graph's");
  const Node* views_out = s.input_views->output();
  const int n_views =
      views_out->args().empty() ? 0 : static_cast<int>(views_out->args()[0].list.size());
  for (const InputInfo& in : m.inputs)
    fuzz::require(in.view >= -1 && in.view < n_views, "an input's view is out of range");
  for (const OutputInfo& o : m.outputs) {
    fuzz::require(o.input >= -1 && o.input < n_inputs, "an output's input is out of range");
    fuzz::require(o.view >= -1 && o.view < n_views, "an output's view is out of range");
    if (o.kind == OutputKind::kIsInput || o.kind == OutputKind::kAliasOfInput)
      fuzz::require(o.input >= 0, "an output that aliases an input names none");
  }
  for (int p : m.mutated_inputs_returned)
    fuzz::require(p >= 0 && p < n_inputs, "a returned mutation names no input");
}

void read_entry(std::string_view text) {
  // The kind and key the entry's first line names: "aotgrad-compile-cache <format> <kind> <key>".
  std::istringstream first{std::string(text.substr(0, text.find('\n')))};
  std::string magic, format, kind, key;
  first >> magic >> format >> kind >> key;
  CompileState s;
  s.kind = kind == "training" ? CompileKind::kTraining : CompileKind::kInference;
  try {
    parse_cache_entry(text, key, s);
  } catch (const Error& e) {
    fuzz::check_error(e);
    return;
  }
  check_indices(s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  read_entry(text);
  // The body (without a last "sha256 ..." line) with its correct trailer.
  std::string_view body = text;
  size_t last = body.size() >= 2 ? body.rfind('\n', body.size() - 2) : std::string_view::npos;
  size_t start = last == std::string_view::npos ? 0 : last + 1;
  if (body.substr(start, 7) == "sha256 ") body = body.substr(0, start);
  std::string entry(body);
  if (!entry.empty() && entry.back() != '\n') entry += '\n';
  entry += "sha256 " + sha256_hex(entry) + "\n";
  read_entry(entry);
  return 0;
}

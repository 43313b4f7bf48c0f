// aotgrad: libFuzzer target -- the graph text parser and the verifier, what `aotgrad check`,
// `compile`, `opt` and `run` read. A text parses and verifies, or it is an Error; a graph that
// verifies prints as a fixed point (printed, parsed and printed again, the same text).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ir/printer.h"
#include "aotgrad/ir/verifier.h"
#include "aotgrad/ops/registry.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace aotgrad;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string once;
  try {
    std::unique_ptr<Graph> g = parse_graph(text, aten_ops());
    verify(*g);
    once = print_graph(*g);
  } catch (const Error& e) {
    fuzz::check_error(e);
    return 0;
  }
  std::string twice;
  try {
    std::unique_ptr<Graph> again = parse_graph(once, aten_ops());
    verify(*again);
    twice = print_graph(*again);
  } catch (const Error& e) {
    fuzz::require(false, "a verified graph's printed text does not parse: " + e.formatted() +
                             "\n--- printed ---\n" + once);
  }
  fuzz::require(twice == once, "printing is not a fixed point:\n--- once ---\n" + once +
                                   "--- twice ---\n" + twice);
  return 0;
}

// Test helper for op-family tests: the metadata aotgrad infers for one call, from annotations.
#pragma once

#include <string>
#include <vector>

#include "aotgrad/ir/error.h"
#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad {

/// The inferred result of `torch.ops.aten.<call>` on placeholders t0, t1, ... annotated `anns`.
inline ValueMeta meta_of(const std::string& call, const std::vector<std::string>& anns) {
  std::string params;
  for (size_t i = 0; i < anns.size(); ++i)
    params += (i ? ", t" : "t") + std::to_string(i) + ": \"" + anns[i] + "\"";
  auto g = parse_graph(
      "def forward(self, " + params + "):\n    r = torch.ops.aten." + call + "\n    return (r,)\n",
      aten_ops());
  return g->find("r")->meta();
}

/// The result's annotation; tuples as "a | b | None".
inline std::string ann(const std::string& call, const std::vector<std::string>& anns) {
  ValueMeta m = meta_of(call, anns);
  if (m.kind != ValueMeta::Kind::Tuple) return m.annotation();
  std::string s;
  for (size_t i = 0; i < m.elems.size(); ++i)
    s += (i ? " | " : "") +
         (m.elems[i].kind == ValueMeta::Kind::None ? "None" : m.elems[i].annotation());
  return s;
}

/// The message the call fails with, or "" when it does not fail.
inline std::string error_of(const std::string& call, const std::vector<std::string>& anns) {
  try {
    meta_of(call, anns);
  } catch (const Error& e) {
    return e.message();
  }
  return "";
}

}  // namespace aotgrad

// aotgrad: helpers for op-family tests -- infer a call's metadata from graph text and print it.
#pragma once

#include <string>

#include "aotgrad/ir/parser.h"
#include "aotgrad/ops/registry.h"

namespace aotgrad::testing_util {

/// "f32[2, 3][3, 1]cpu", with " @5" for a storage offset; lists as [..], tuples as (..).
inline std::string text_of(const ValueMeta& m) {
  if (m.is_tensor()) {
    std::string s = m.tensor.annotation();
    if (!(m.tensor.storage_offset == 0)) s += " @" + m.tensor.storage_offset.to_string();
    return s;
  }
  if (m.kind == ValueMeta::Kind::Tuple) {
    std::string s = m.is_list ? "[" : "(";
    for (size_t i = 0; i < m.elems.size(); ++i) s += (i ? ", " : "") + text_of(m.elems[i]);
    return s + (m.is_list ? "]" : ")");
  }
  return m.annotation();
}

/// Parses `def forward(self, <params>):` with `body` (statements separated by ';') and returns the
/// inferred metadata of `y`, or "error: <message>".
inline std::string infer(const std::string& params, const std::string& body) {
  std::string text = "def forward(self, " + params + "):\n";
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find(';', start);
    if (end == std::string::npos) end = body.size();
    text += "    " + body.substr(start, end - start) + "\n";
    start = end + 1;
  }
  text += "    return y\n";
  try {
    auto g = parse_graph(text, aten_ops());
    return text_of(g->find("y")->meta());
  } catch (const Error& e) {
    return "error: " + e.message();
  }
}

}  // namespace aotgrad::testing_util

// aotgrad: appending an op call to a graph the way PyTorch's tracer records it.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aotgrad/ir/graph.h"

namespace aotgrad {

/// Appends (at the graph's insertion point) a call of `op` ("mul.Tensor", "aten::sum.dim_IntList")
/// with positional and keyword arguments; metadata is inferred. Trailing positional arguments and
/// keyword arguments equal to their schema defaults are dropped, as FX prints calls.
Node* append_call(Graph& g, std::string_view op, std::vector<Arg> args,
                  std::vector<std::pair<std::string, Arg>> kwargs = {});
Node* append_call(Graph& g, const OpDef& op, std::vector<Arg> args,
                  std::vector<std::pair<std::string, Arg>> kwargs = {});

}  // namespace aotgrad

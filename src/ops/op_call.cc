// aotgrad: append_call -- op calls with defaults dropped, for derivative rules and decompositions.
#include "aotgrad/ops/op_call.h"

#include "aotgrad/ops/registry.h"

namespace aotgrad {

Node* append_call(Graph& g, std::string_view op_name, std::vector<Arg> args,
                  std::vector<std::pair<std::string, Arg>> kwargs) {
  return append_call(g, aten_ops().get(op_name), std::move(args), std::move(kwargs));
}

Node* append_call(Graph& g, const OpDef& op, std::vector<Arg> args,
                  std::vector<std::pair<std::string, Arg>> kwargs) {
  const auto& sargs = op.schema.args;
  while (!args.empty() && args.size() <= sargs.size() && sargs[args.size() - 1].has_default &&
         default_arg(sargs[args.size() - 1]) == args.back())
    args.pop_back();
  for (auto it = kwargs.begin(); it != kwargs.end();) {
    int idx = op.schema.arg_index(it->first);
    if (idx >= 0 && sargs[idx].has_default && default_arg(sargs[idx]) == it->second)
      it = kwargs.erase(it);
    else
      ++it;
  }
  return g.add_call(op, std::move(args), std::move(kwargs));
}

}  // namespace aotgrad

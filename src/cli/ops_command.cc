// aotgrad: `aotgrad ops` -- lists the registered op overloads with their tags.
#include <iostream>

#include "aotgrad/ops/registry.h"
#include "commands.h"

namespace aotgrad::cli {
namespace {

int run_ops(const Args& args) {
  auto tag_filter = args.get("tag");
  bool schemas = args.has("schema");
  for (const OpDef* op : aten_ops().all()) {
    std::string tags = tag_names(op->tags);
    if (tag_filter && ("," + tags + ",").find("," + *tag_filter + ",") == std::string::npos)
      continue;
    std::cout << op->name;
    if (schemas) std::cout << "\t" << op->schema.text;
    std::cout << "\t" << (tags.empty() ? "-" : tags) << "\n";
  }
  return kOk;
}

}  // namespace

const Command& ops_command() {
  static const Command cmd{
      {"ops",
       "aotgrad ops [--tag=TAG] [--schema]",
       "Lists the op overloads aotgrad knows, one per line: name, then its tags.",
       {{"tag", true, "only ops with this tag (pointwise, view, inplace, random, ...)", "TAG"},
        {"schema", false, "also print each op's ATen schema"}},
       0,
       0},
      run_ops};
  return cmd;
}

}  // namespace aotgrad::cli

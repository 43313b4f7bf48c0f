// aotgrad (api internal): placeholder names of a module's lifted tensors and the call's inputs.
#pragma once

#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace aotgrad {

/// `p_` + the dotted name with dots as underscores, as tools/export.py names them.
inline std::string lifted_placeholder_name(const std::string& dotted) {
  std::string name = "p_" + dotted;
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

/// The module's tensors' placeholder names, then the inputs' (`user_names`, or arg0_1, ...).
inline std::vector<std::string> lifted_input_names(const ModuleState& state,
                                                   const std::vector<std::string>& user_names,
                                                   size_t num_inputs, const char* who) {
  AOTGRAD_CHECK(user_names.empty() || user_names.size() == num_inputs, who, ": ", user_names.size(),
                " input names for ", num_inputs, " inputs");
  std::vector<std::string> names;
  for (const std::string& n : state.names) names.push_back(lifted_placeholder_name(n));
  for (size_t i = 0; i < num_inputs; ++i)
    names.push_back(user_names.empty() ? "arg" + std::to_string(i) + "_1" : user_names[i]);
  return names;
}

}  // namespace aotgrad

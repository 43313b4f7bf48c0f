// aotgrad: `aotgrad calibrate` in the libtorch module.
#pragma once

#include "../cli.h"

namespace aotgrad::cli {

int calibrate_machine(const Args& args);

}  // namespace aotgrad::cli

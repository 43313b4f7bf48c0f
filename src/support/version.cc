// aotgrad: the version of aotgrad.
#include "aotgrad/support/version.h"

namespace aotgrad {

const char* version() { return "0.1.0"; }

}  // namespace aotgrad

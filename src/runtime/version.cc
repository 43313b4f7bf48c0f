// aotgrad: version string of the library.
#include "aotgrad/runtime/version.h"

namespace aotgrad {

const char* version() { return "0.1.0"; }

}  // namespace aotgrad

// aotgrad: version of the library (part of every compile-cache key).
#pragma once

namespace aotgrad {

const char* version();

}  // namespace aotgrad

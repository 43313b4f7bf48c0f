// aotgrad: the version of aotgrad (part of every compile-cache key). Std only.
#pragma once

namespace aotgrad {

/// "MAJOR.MINOR.PATCH", the project's version.
const char* version();

}  // namespace aotgrad

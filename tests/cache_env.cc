// aotgrad tests: every test binary runs with the compile cache off unless AOTGRAD_CACHE_DIR says
// otherwise, so running one directly never reads or writes the user's cache directory (ctest sets
// AOTGRAD_CACHE_DIR=off too). Cache tests give the cache their own temporary directories.
#include <cstdlib>

namespace {

const bool kCacheOff = [] { return ::setenv("AOTGRAD_CACHE_DIR", "off", /*overwrite=*/0) == 0; }();

}  // namespace

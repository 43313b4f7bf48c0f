// The tests' one helper for error messages: what a call throws, so that a test can check the
// message names the place and the cause.
#pragma once

#include <exception>
#include <functional>
#include <string>

namespace aotgrad {

/// The message of the exception `f` throws (aotgrad::Error's what() is its message), or
/// "(no error)" when `f` returns.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace aotgrad

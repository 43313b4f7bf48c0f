// aotgrad: the one exception type users see, and the internal check macro. Std only.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace aotgrad {

/// A source position in graph text (1-based); line 0 means "no position".
struct SourceLoc {
  int line = 0;
  int col = 0;
};

/// The one documented exception type of aotgrad. Everything a user can cause (malformed text,
/// unknown op, shape mismatch, bad inputs, corrupt files) throws Error with the place and cause.
class Error : public std::runtime_error {
 public:
  explicit Error(std::string message, SourceLoc loc = {})
      : std::runtime_error(message), message_(std::move(message)), loc_(loc) {}
  const std::string& message() const { return message_; }
  const SourceLoc& loc() const { return loc_; }
  /// "LINE:COL: error: MESSAGE" when a position is known, else "error: MESSAGE".
  std::string formatted() const {
    if (loc_.line > 0)
      return std::to_string(loc_.line) + ":" + std::to_string(loc_.col) + ": error: " + message_;
    return "error: " + message_;
  }

 private:
  std::string message_;
  SourceLoc loc_;
};

namespace detail {
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace aotgrad

/// Throws aotgrad::Error with the streamed message when `cond` is false. Used both for user
/// errors (meta functions, parsers) and internal invariants (with node and op in the message).
#define AOTGRAD_CHECK(cond, ...)                                                  \
  do {                                                                            \
    if (!(cond)) throw ::aotgrad::Error(::aotgrad::detail::str_cat(__VA_ARGS__)); \
  } while (0)

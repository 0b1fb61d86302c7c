#pragma once
// Exceptions thrown by cvattn. Every cvattn::Error means "the caller gave bad input";
// internal invariants use std::logic_error.
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : Error(std::string(), message) {}
  explicit Error(const char* message) : Error(std::string(), std::string(message)) {}
  // The same error raised inside the module at `module_path` (dotted, "stem.0.conv"); what()
  // reads "stem.0.conv: <message>". Containers rethrow a child's error this way.
  Error(const std::string& module_path, const std::string& message)
      : std::runtime_error(module_path.empty() ? message : module_path + ": " + message),
        path_(std::make_shared<const std::string>(module_path)),
        message_(std::make_shared<const std::string>(message)) {}

  // Where the error was raised, relative to the module the caller ran; empty outside modules.
  [[nodiscard]] const std::string& module_path() const noexcept { return *path_; }
  // what() without the module path.
  [[nodiscard]] const std::string& message() const noexcept { return *message_; }

 private:
  // Shared so that copying an exception cannot throw.
  std::shared_ptr<const std::string> path_;
  std::shared_ptr<const std::string> message_;
};
// A tensor has the wrong rank, size or layout.
class CVATTN_EXPORT ShapeError : public Error {
 public:
  using Error::Error;
};
// A bad option, a forbidden value, or a size over the allocation cap.
class CVATTN_EXPORT ValueError : public Error {
 public:
  using Error::Error;
};
// A file that cannot be read, written or parsed.
class CVATTN_EXPORT IoError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace cvattn

// Throws ErrorType with the streamed message parts when cond is false. The parts are only
// formatted on failure.
#define CVATTN_CHECK(cond, ErrorType, ...)                               \
  do {                                                                   \
    if (!(cond)) throw ErrorType(::cvattn::detail::concat(__VA_ARGS__)); \
  } while (false)

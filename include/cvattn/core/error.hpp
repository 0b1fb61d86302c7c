#pragma once
// Exceptions thrown by cvattn. Every cvattn::Error means "the caller gave bad input";
// internal invariants use std::logic_error.
#include <sstream>
#include <stdexcept>
#include <string>

#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
#define CVATTN_CHECK(cond, ErrorType, ...)                          \
  do {                                                              \
    if (!(cond)) throw ErrorType(::cvattn::detail::concat(__VA_ARGS__)); \
  } while (false)

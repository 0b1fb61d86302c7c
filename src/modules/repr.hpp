#pragma once
// Private helpers that print option values the way PyTorch's module reprs do.
#include <cstdio>
#include <string>

#include "cvattn/core/options.hpp"

namespace cvattn::detail {

// "(3, 3)", as Python prints a tuple.
inline std::string tuple_repr(Pair2 p) {
  return "(" + std::to_string(p.h) + ", " + std::to_string(p.w) + ")";
}
// "2" when both parts agree (PyTorch pooling modules keep an int), else "(2, 3)".
inline std::string int_or_tuple_repr(Pair2 p) {
  return p.h == p.w ? std::to_string(p.h) : tuple_repr(p);
}
inline const char* bool_repr(bool b) { return b ? "True" : "False"; }
// "1e-05", "0.001": %g matches Python's repr for the usual eps values.
inline std::string float_repr(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
// "" or "features.0." for a user prefix given with or without the trailing dot.
inline std::string key_prefix(const std::string& prefix) {
  return prefix.empty() || prefix.back() == '.' ? prefix : prefix + ".";
}

}  // namespace cvattn::detail

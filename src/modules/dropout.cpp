#include "cvattn/modules/dropout.hpp"

#include <cstdio>

#include "cvattn/core/error.hpp"
#include "modules/repr.hpp"

namespace cvattn {
namespace {

double checked_probability(double p, const char* where, const char* name) {
  CVATTN_CHECK(p >= 0.0 && p <= 1.0, ValueError, where, ": ", name,
               " must lie in [0, 1], got ", p);
  return p;
}

}  // namespace

Dropout::Dropout(double p) : p_(checked_probability(p, "Dropout", "p")) {}

Tensor Dropout::forward(const Tensor& x) const {
  check_defined(x, "x", "Dropout::forward");
  return x;
}

std::string Dropout::describe() const {
  return "Dropout(p=" + detail::float_repr(p_) + ", inplace=False)";
}

DropPath::DropPath(double drop_prob)
    : drop_prob_(checked_probability(drop_prob, "DropPath", "drop_prob")) {}

Tensor DropPath::forward(const Tensor& x) const {
  check_defined(x, "x", "DropPath::forward");
  return x;
}

std::string DropPath::describe() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", drop_prob_);
  return std::string("DropPath(drop_prob=") + buf + ")";
}

}  // namespace cvattn

#pragma once
// EXPECT_TENSOR_NEAR(actual, expected, Tolerance{abs, rel}): passes when every element satisfies
// |a - e| <= abs + rel * |e| (the project bar is {1e-4, 1e-4}); NaN matches only NaN and an
// infinity only the same infinity. On failure it reports the first bad index, both values, how
// many elements failed and the largest difference.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "cvattn/core/tensor.hpp"

namespace cvattn::test {

struct Tolerance {
  double abs = 1e-4;
  double rel = 1e-4;
};

inline std::string index_string(const Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t i = shape.size(); i-- > 0;) {
    idx[i] = shape[i] ? flat % shape[i] : 0;
    flat = shape[i] ? flat / shape[i] : 0;
  }
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < idx.size(); ++i) out << (i ? ", " : "") << idx[i];
  out << ']';
  return out.str();
}

inline ::testing::AssertionResult tensor_near(const char* a_expr, const char* e_expr,
                                              const char* /*tol_expr*/, const Tensor& actual,
                                              const Tensor& expected, Tolerance tol) {
  if (actual.shape() != expected.shape()) {
    return ::testing::AssertionFailure()
           << a_expr << " has shape " << to_string(actual.shape()) << " but " << e_expr
           << " has shape " << to_string(expected.shape());
  }
  std::int64_t bad = 0, first = -1;
  double worst = 0;
  for (std::int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual[i], e = expected[i];
    bool ok;
    if (std::isnan(e)) {
      ok = std::isnan(a);
    } else if (std::isinf(e)) {
      ok = a == e;
    } else {
      const double d = std::fabs(a - e);
      ok = d <= tol.abs + tol.rel * std::fabs(e);
      if (!std::isnan(d) && d > worst) worst = d;
      if (std::isnan(d)) ok = false;
    }
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << a_expr << " differs from " << e_expr << " in " << bad << " of " << actual.numel()
         << " elements (shape " << to_string(actual.shape()) << "); first at "
         << index_string(actual.shape(), first) << ": " << actual[first] << " vs "
         << expected[first] << "; max |diff| " << worst << " (tolerance " << tol.abs << " + "
         << tol.rel << "*|ref|)";
}

}  // namespace cvattn::test

#define EXPECT_TENSOR_NEAR(actual, expected, tol) \
  EXPECT_PRED_FORMAT3(::cvattn::test::tensor_near, actual, expected, tol)
#define ASSERT_TENSOR_NEAR(actual, expected, tol) \
  ASSERT_PRED_FORMAT3(::cvattn::test::tensor_near, actual, expected, tol)

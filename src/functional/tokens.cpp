#include "cvattn/functional/tokens.hpp"

#include <algorithm>
#include <string>

#include "cvattn/core/error.hpp"

namespace cvattn::functional {

Tensor prepend_tokens(const std::vector<Tensor>& prefix, const Tensor& tokens) {
  const char* where = "prepend_tokens";
  check_defined(tokens, "tokens", where);
  CVATTN_CHECK(tokens.rank() == 3, ShapeError, where, ": tensor 'tokens' expected [N, L, D], got ",
               to_string(tokens.shape()));
  const std::int64_t n = tokens.dim(0), l = tokens.dim(1), d = tokens.dim(2);
  std::int64_t total = l;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    const std::string name = "prefix[" + std::to_string(i) + "]";
    check_defined(prefix[i], name.c_str(), where);
    check_shape(prefix[i], {1, kAny, d}, name.c_str(), where);
    total += prefix[i].dim(1);
  }
  Tensor out = Tensor::empty({n, total, d});
  for (std::int64_t s = 0; s < n; ++s) {
    float* dst = out.data() + s * total * d;
    for (const Tensor& p : prefix) dst = std::copy_n(p.data(), p.numel(), dst);
    std::copy_n(tokens.data() + s * l * d, l * d, dst);
  }
  return out;
}

Tensor select_token(const Tensor& tokens, std::int64_t index) {
  const char* where = "select_token";
  check_defined(tokens, "tokens", where);
  CVATTN_CHECK(tokens.rank() == 3, ShapeError, where, ": tensor 'tokens' expected [N, T, D], got ",
               to_string(tokens.shape()));
  const std::int64_t n = tokens.dim(0), t = tokens.dim(1), d = tokens.dim(2);
  CVATTN_CHECK(index >= 0 && index < t, ShapeError, where, ": index ", index, " out of range for ",
               t, " tokens");
  Tensor out = Tensor::empty({n, d});
  for (std::int64_t s = 0; s < n; ++s) {
    std::copy_n(tokens.data() + (s * t + index) * d, d, out.data() + s * d);
  }
  return out;
}

Tensor mean_of_two(const Tensor& a, const Tensor& b) {
  const char* where = "mean_of_two";
  check_defined(a, "a", where);
  check_defined(b, "b", where);
  CVATTN_CHECK(a.shape() == b.shape(), ShapeError, where, ": tensor 'b' expected the shape of 'a' ",
               to_string(a.shape()), ", got ", to_string(b.shape()));
  Tensor out = Tensor::empty(a.shape());
  for (std::int64_t i = 0; i < a.numel(); ++i) out[i] = (a[i] + b[i]) / 2.0f;
  return out;
}

}  // namespace cvattn::functional

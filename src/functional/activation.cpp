#include "cvattn/functional/activation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cvattn/core/error.hpp"
#include "functional/detail/activation_kernels.hpp"
#include "functional/detail/softmax_axis_kernels.hpp"
#include "functional/detail/tasks.hpp"

namespace cvattn {

ActLayer parse_act_layer(const std::string& word) {
  static const std::pair<const char*, ActLayer> kWords[] = {
      {"identity", ActLayer::identity},
      {"relu", ActLayer::relu},
      {"relu6", ActLayer::relu6},
      {"sigmoid", ActLayer::sigmoid},
      {"tanh", ActLayer::tanh},
      {"silu", ActLayer::silu},
      {"swish", ActLayer::silu},
      {"gelu", ActLayer::gelu},
      {"gelu_tanh", ActLayer::gelu_tanh},
      {"hard_swish", ActLayer::hard_swish},
      {"hardswish", ActLayer::hard_swish},
      {"hard_sigmoid", ActLayer::hard_sigmoid},
      {"hardsigmoid", ActLayer::hard_sigmoid},
      {"mish", ActLayer::mish}};
  for (const auto& [name, act] : kWords) {
    if (word == name) return act;
  }
  throw ValueError("parse_act_layer: unknown act_layer '" + word +
                   "' (expected identity, relu, relu6, sigmoid, tanh, silu, swish, gelu, "
                   "gelu_tanh, hard_swish, hard_sigmoid or mish)");
}

const char* to_string(ActLayer act) {
  switch (act) {
    case ActLayer::identity:
      return "identity";
    case ActLayer::relu:
      return "relu";
    case ActLayer::relu6:
      return "relu6";
    case ActLayer::sigmoid:
      return "sigmoid";
    case ActLayer::tanh:
      return "tanh";
    case ActLayer::silu:
      return "silu";
    case ActLayer::gelu:
      return "gelu";
    case ActLayer::gelu_tanh:
      return "gelu_tanh";
    case ActLayer::hard_swish:
      return "hard_swish";
    case ActLayer::hard_sigmoid:
      return "hard_sigmoid";
    case ActLayer::mish:
      return "mish";
  }
  return "unknown";
}

GeluApproximate parse_gelu_approximate(const std::string& word) {
  if (word == "none") return GeluApproximate::none;
  if (word == "tanh") return GeluApproximate::tanh;
  throw ValueError("gelu: unknown approximate '" + word + "' (expected none or tanh)");
}

const char* to_string(GeluApproximate approximate) {
  return approximate == GeluApproximate::none ? "none" : "tanh";
}

}  // namespace cvattn

namespace cvattn::functional {
namespace {

// Elements per task of the elementwise ops: large enough to amortise the fork.
constexpr std::int64_t kElementChunk = std::int64_t{1} << 15;

// dst may be src (the kernels are elementwise).
void unary_into(const float* src, float* dst, std::int64_t n, ActLayer act) {
  cvattn::detail::parallel_for(detail::ceil_div(n, kElementChunk), [&](std::int64_t c) {
    const std::int64_t begin = c * kElementChunk;
    cvattn::detail::activation_kernel(act, src + begin, dst + begin,
                                      std::min(kElementChunk, n - begin));
  });
}

Tensor unary(const Tensor& x, const char* where, ActLayer act) {
  check_defined(x, "x", where);
  Tensor y = Tensor::empty(x.shape());
  unary_into(x.data(), y.data(), x.numel(), act);
  return y;
}

// [outer, size, inner] view of x around dimension dim.
struct Axis {
  std::int64_t outer = 1, size = 1, inner = 1;
};

Axis axis_of(const Tensor& x, int dim, const char* where) {
  check_defined(x, "x", where);
  const int rank = x.rank();
  const int r = std::max(rank, 1);  // a scalar behaves as [1] (dims -1 and 0)
  CVATTN_CHECK(dim >= -r && dim < r, ValueError, where, ": dim ", dim, " out of range for ",
               "tensor 'x' ", to_string(x.shape()), " (expected [", -r, ", ", r - 1, "])");
  Axis a;
  if (rank == 0) return a;
  const int d = dim < 0 ? dim + rank : dim;
  for (int i = 0; i < d; ++i) a.outer *= x.shape()[static_cast<std::size_t>(i)];
  a.size = x.shape()[static_cast<std::size_t>(d)];
  for (int i = d + 1; i < rank; ++i) a.inner *= x.shape()[static_cast<std::size_t>(i)];
  return a;
}

// Columns per task when the reduced axis is not the last one.
constexpr std::int64_t kColumnChunk = 1024;

// softmax / log_softmax as PyTorch's CPU kernel computes them: the slice maximum m, e^(x - m),
// its sum s, then e / s (or x - m - log s); every pass a dispatched kernel
// (detail/softmax_axis_kernels.hpp). A NaN in a slice, an all -inf slice or a +inf make the
// slice NaN, as in PyTorch.
template <bool kLog>
Tensor softmax_impl(const Tensor& x, int dim, const char* where) {
  const Axis a = axis_of(x, dim, where);
  Tensor y = Tensor::empty(x.shape());
  if (y.numel() == 0) return y;
  const float* src = x.data();
  float* dst = y.data();
  if (a.inner == 1) {
    // Contiguous rows.
    cvattn::detail::parallel_for(a.outer, [&](std::int64_t row) {
      cvattn::detail::softmax_row_exact(src + row * a.size, dst + row * a.size, a.size, kLog);
    });
    return y;
  }
  // Strided rows: reduce across `size` rows of `inner` columns, a chunk of columns at a time,
  // so every inner loop runs over contiguous columns.
  const std::int64_t col_chunk = std::min(a.inner, kColumnChunk);
  const std::int64_t chunks = detail::ceil_div(a.inner, col_chunk);
  const std::int64_t tasks = a.outer * chunks;
  const std::int64_t slots = detail::slot_count(tasks);
  const std::int64_t stride = detail::slot_stride(2 * col_chunk);
  Tensor scratch = Tensor::empty({slots, stride});
  float* scratch_data = scratch.data();
  detail::for_each_task(tasks, slots, [&](std::int64_t t, std::int64_t slot) {
    const std::int64_t o = t / chunks;
    const std::int64_t c0 = (t % chunks) * col_chunk;
    const std::int64_t cols = std::min(col_chunk, a.inner - c0);
    float* m = scratch_data + slot * stride;
    float* s = m + col_chunk;
    const float* in = src + o * a.size * a.inner + c0;
    float* out = dst + o * a.size * a.inner + c0;
    std::copy(in, in + cols, m);
    for (std::int64_t k = 1; k < a.size; ++k) cvattn::detail::max_cols(m, in + k * a.inner, cols);
    std::fill(s, s + cols, 0.0f);
    for (std::int64_t k = 0; k < a.size; ++k) {
      cvattn::detail::exp_shift_cols(in + k * a.inner, m, out + k * a.inner, s, cols, !kLog);
    }
    for (std::int64_t j = 0; j < cols; ++j) s[j] = kLog ? std::log(s[j]) : 1.0f / s[j];
    for (std::int64_t k = 0; k < a.size; ++k) {
      cvattn::detail::combine_cols(out + k * a.inner, s, cols, !kLog);
    }
  });
  return y;
}

}  // namespace

// Every elementwise activation runs the dispatched kernel of detail/activation_kernels.hpp
// (reference twin: functional/reference/activation.hpp), a chunk per task.
Tensor relu(const Tensor& x) { return unary(x, "relu", ActLayer::relu); }
Tensor sigmoid(const Tensor& x) { return unary(x, "sigmoid", ActLayer::sigmoid); }
Tensor tanh(const Tensor& x) { return unary(x, "tanh", ActLayer::tanh); }
Tensor relu6(const Tensor& x) { return unary(x, "relu6", ActLayer::relu6); }

Tensor gelu(const Tensor& x, GeluApproximate approximate) {
  // exact: Eigen's float erf (clamped at +-4, where it is +-1), so gelu(-inf) = -inf * 0 = NaN
  // as in PyTorch.
  return unary(x, "gelu",
               approximate == GeluApproximate::tanh ? ActLayer::gelu_tanh : ActLayer::gelu);
}

Tensor silu(const Tensor& x) { return unary(x, "silu", ActLayer::silu); }
Tensor hardswish(const Tensor& x) { return unary(x, "hardswish", ActLayer::hard_swish); }
Tensor hardsigmoid(const Tensor& x) { return unary(x, "hardsigmoid", ActLayer::hard_sigmoid); }
Tensor mish(const Tensor& x) { return unary(x, "mish", ActLayer::mish); }

void activation_(Tensor& x, ActLayer act) {
  check_defined(x, "x", "activation_");
  if (act != ActLayer::identity) unary_into(x.data(), x.data(), x.numel(), act);
}

Tensor activation(const Tensor& x, ActLayer act) {
  switch (act) {
    case ActLayer::identity:
      check_defined(x, "x", "activation");
      return x;
    case ActLayer::relu:
      return relu(x);
    case ActLayer::relu6:
      return relu6(x);
    case ActLayer::sigmoid:
      return sigmoid(x);
    case ActLayer::tanh:
      return tanh(x);
    case ActLayer::silu:
      return silu(x);
    case ActLayer::gelu:
      return gelu(x, GeluApproximate::none);
    case ActLayer::gelu_tanh:
      return gelu(x, GeluApproximate::tanh);
    case ActLayer::hard_swish:
      return hardswish(x);
    case ActLayer::hard_sigmoid:
      return hardsigmoid(x);
    case ActLayer::mish:
      return mish(x);
  }
  throw std::logic_error("activation: unhandled ActLayer");
}

Tensor softmax(const Tensor& x, int dim) { return softmax_impl<false>(x, dim, "softmax"); }

Tensor log_softmax(const Tensor& x, int dim) { return softmax_impl<true>(x, dim, "log_softmax"); }

}  // namespace cvattn::functional

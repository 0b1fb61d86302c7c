#include "cvattn/functional/activation.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "cvattn/core/error.hpp"
#include "functional/detail/tasks.hpp"

namespace cvattn::functional {
namespace {

using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;

// Elements per task of the elementwise ops: large enough to amortise the fork.
constexpr std::int64_t kElementChunk = std::int64_t{1} << 15;

template <class Op>
Tensor elementwise(const Tensor& x, const char* where, Op op) {
  check_defined(x, "x", where);
  Tensor y = Tensor::empty(x.shape());
  const std::int64_t n = x.numel();
  const std::int64_t chunks = detail::ceil_div(n, kElementChunk);
  const float* src = x.data();
  float* dst = y.data();
  cvattn::detail::parallel_for(chunks, [&](std::int64_t c) {
    const std::int64_t begin = c * kElementChunk;
    const std::int64_t count = std::min(kElementChunk, n - begin);
    op(ConstArrayMap(src + begin, count), ArrayMap(dst + begin, count));
  });
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
      const ConstArrayMap in(src + row * a.size, a.size);
      ArrayMap out(dst + row * a.size, a.size);
      const float m = in.maxCoeff();
      if constexpr (kLog) {
        out = in - m;
        const float lse = std::log(out.exp().sum());
        out -= lse;
      } else {
        out = (in - m).exp();
        out *= 1.0f / out.sum();
      }
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
    ArrayMap m(scratch_data + slot * stride, cols);
    ArrayMap s(scratch_data + slot * stride + col_chunk, cols);
    const float* in = src + o * a.size * a.inner + c0;
    float* out = dst + o * a.size * a.inner + c0;
    m = ConstArrayMap(in, cols);
    for (std::int64_t k = 1; k < a.size; ++k) m = m.max(ConstArrayMap(in + k * a.inner, cols));
    s.setZero();
    for (std::int64_t k = 0; k < a.size; ++k) {
      ArrayMap row(out + k * a.inner, cols);
      if constexpr (kLog) {
        row = ConstArrayMap(in + k * a.inner, cols) - m;
        s += row.exp();
      } else {
        row = (ConstArrayMap(in + k * a.inner, cols) - m).exp();
        s += row;
      }
    }
    if constexpr (kLog) {
      s = s.log();
      for (std::int64_t k = 0; k < a.size; ++k) ArrayMap(out + k * a.inner, cols) -= s;
    } else {
      s = s.inverse();
      for (std::int64_t k = 0; k < a.size; ++k) ArrayMap(out + k * a.inner, cols) *= s;
    }
  });
  return y;
}

}  // namespace

Tensor relu(const Tensor& x) {
  return elementwise(x, "relu", [](ConstArrayMap in, ArrayMap out) {
    const float* __restrict src = in.data();
    float* __restrict dst = out.data();
    // (v < 0) ? 0 : v keeps NaN (std::max(0, NaN) would not).
    for (Eigen::Index i = 0; i < in.size(); ++i) dst[i] = src[i] < 0.0f ? 0.0f : src[i];
  });
}

Tensor sigmoid(const Tensor& x) {
  return elementwise(x, "sigmoid",
                     [](ConstArrayMap in, ArrayMap out) { out = ((-in).exp() + 1.0f).inverse(); });
}

Tensor tanh(const Tensor& x) {
  return elementwise(x, "tanh", [](ConstArrayMap in, ArrayMap out) { out = in.tanh(); });
}

Tensor softmax(const Tensor& x, int dim) { return softmax_impl<false>(x, dim, "softmax"); }

Tensor log_softmax(const Tensor& x, int dim) { return softmax_impl<true>(x, dim, "log_softmax"); }

}  // namespace cvattn::functional

#pragma once
// The plane loops of max_pool2d, avg_pool2d and adaptive pooling (functional/pooling.cpp) as
// runtime- dispatched Highway kernels (bodies in pool_kernels-inl.h, reference twin in
// functional/reference/pool_kernels.hpp). The maximum propagates NaN as PyTorch's does
// (`val > max || isnan(val)`). Private to cvattn.
#include <cstdint>

namespace cvattn::functional::detail {

// One max_pool2d / avg_pool2d plane: input h x w, output ho x wo, kernel kh x kw, stride,
// padding, dilation (1 for avg_pool2d).
// `buffer` floats of the row scratch cover the padded row and every window (pooling.cpp's
// Window::buffer).
struct PoolPlane {
  std::int64_t h, w, ho, wo;
  std::int64_t kh, kw, sh, sw, ph, pw, dh, dw;
  std::int64_t buffer;
};

// out[oy, ox] = the NaN-propagating max of the window's input pixels (windows past the input
// read -inf); row is scratch of `buffer` floats.
void max_pool_plane(const float* src, const PoolPlane& g, float* row, float* out);

// out[oy, ox] = the window's sum (rows added first, in order, then the window's columns in
// order) / divisor, divisor = `divisor` when it is not 0, else row_count[oy] * col_count[ox]
// (1 where that is 0: a window holding no input pixel sums to 0). row is scratch of `buffer` +
// wo floats.
void avg_pool_plane(const float* src, const PoolPlane& g, const float* row_count,
                    const float* col_count, float divisor, float* row, float* out);

// acc[i] = max_nan(acc[i], x[i]) (kMax) or acc[i] + x[i], for i < n, over rows [lo, hi) of a
// plane of row length n: x = src + r * n, in row order.
void fold_rows(bool max, const float* src, std::int64_t n, std::int64_t lo, std::int64_t hi,
               float* acc);

// One [h, w] plane's row means rows[r] and column means cols[i] (strip_pool). Each row is
// summed as four interleaved partial sums ((p0 + p1) + (p2 + p3), then the w % 4 last elements
// in order), each column in row order: the same 4-float steps on every target, so every build
// gives the same bits. Auto-vectorised plain code compiled to scalar code in a native build
// (aliasing fears and the in-order row sum), 3x slower than the portable one.
void row_column_means(const float* src, std::int64_t h, std::int64_t w, float* rows, float* cols);

}  // namespace cvattn::functional::detail

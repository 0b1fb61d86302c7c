#pragma once
// The row kernels of layer_norm and group_norm (functional/normalization.cpp) as runtime-
// dispatched Highway kernels (bodies in norm_kernels-inl.h, reference twin in
// functional/reference/norm_kernels.hpp). Private to cvattn.
#include <cstdint>

namespace cvattn::functional::detail {

struct Moments {
  float mean = 0.0f;
  float rstd = 0.0f;  // 1 / sqrt(var + eps)
};

// Sums run in 16 float lanes (lane l takes the elements i with i % 16 == l) over blocks of at
// most kMomentBlock elements, each block's lanes added in double, so that long groups
// (GroupNorm's C/G * H * W) keep float-rounding error from growing with n; the elements after
// the last whole 16 are added in double.
inline constexpr std::int64_t kMomentLanes = 16;
inline constexpr std::int64_t kMomentBlock = 1024;

// Mean and 1 / sqrt(biased variance + eps) of x[0, n), n > 0, in two passes: the mean, then the
// sum of squares about it (rounded to float first), so that a large common offset does not
// cancel the variance away. NaN or inf anywhere gives a NaN rstd.
[[nodiscard]] Moments moments(const float* x, std::int64_t n, double eps);

// out[i] = (in[i] * m.rstd - m.mean * m.rstd) * w[i] + b[i] for i < n; w / b null mean 1 / 0
// (the multiply by 1 and add of 0 are left out). The multiply-adds may be fused where the
// target has FMA.
void normalize_row(const float* in, float* out, std::int64_t n, Moments m, const float* w,
                   const float* b);

// layer_norm of `rows` contiguous rows of n floats: normalize_row(row, moments(row)) for each, the
// same values (two rows' sums run side by side).
void layer_norm_rows(const float* in, float* out, std::int64_t rows, std::int64_t n, const float* w,
                     const float* b, double eps);

// layer_norm2d (timm's channels-first LayerNorm) of `len` <= kChannelsFirstTile pixels at in /
// out, channels hw apart: per pixel, the mean over the c channels (summed in double in channel
// order), the sum of squares about the float mean (each square rounded to float, summed in
// double), then out = (in * rstd - mean * rstd) * w[ch] + b[ch] (w / b null mean 1 / 0).
inline constexpr std::int64_t kChannelsFirstTile = 64;
void layer_norm2d_tile(const float* in, float* out, std::int64_t c, std::int64_t hw,
                       std::int64_t len, const float* w, const float* b, double eps);

}  // namespace cvattn::functional::detail

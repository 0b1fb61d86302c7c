#pragma once
// F.interpolate on [N, C, H, W] with PyTorch 1.13's semantics: nearest, bilinear and bicubic
// (A = -0.75), an output `size` or a `scale_factor`, align_corners for the interpolating
// modes. The mode is grid_sample's Interpolation (functional/sampling.hpp).
#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/sampling.hpp"

namespace cvattn::functional {

// A (height, width) pair of scale factors; one number means both.
struct Scale2 {
  double h = 0.0;
  double w = 0.0;
  constexpr Scale2() = default;
  constexpr Scale2(double both) : h(both), w(both) {}  // NOLINT: implicit on purpose
  constexpr Scale2(double height, double width) : h(height), w(width) {}
};

struct InterpolateOptions {
  // Exactly one of size and scale_factor is given (a zero pair means "not given").
  CVATTN_ARG(Pair2, size) = Pair2(0, 0);
  CVATTN_ARG(Scale2, scale_factor) = Scale2(0.0, 0.0);
  CVATTN_ARG(Interpolation, mode) = Interpolation::nearest;
  // Only for bilinear and bicubic (PyTorch rejects it for nearest, and so does cvattn).
  CVATTN_ARG(bool, align_corners) = false;
  // PyTorch's default (None / False): with scale_factor, the output size is
  // floor(in * scale_factor) and source coordinates use 1 / scale_factor. True: they use
  // in / out instead, as if that size had been given.
  CVATTN_ARG(bool, recompute_scale_factor) = false;
};

// input [N, C, H, W] -> [N, C, Ho, Wo].
//   nearest:  src = min(floor(dst * s), in - 1), s = 1 / scale_factor (or in / out);
//   bilinear: src = s * (dst + 0.5) - 0.5 clamped at 0 (align_corners: dst * (in-1)/(out-1)),
//             two taps per axis, the upper one clamped to the border;
//   bicubic:  the same source coordinate without the clamp at 0, four taps per axis with
//             Keys' A = -0.75, each tap clamped to the border.
// Coordinates are computed in float, as PyTorch does for float tensors.
[[nodiscard]] CVATTN_EXPORT Tensor interpolate(const Tensor& input,
                                               const InterpolateOptions& options);

}  // namespace cvattn::functional

#pragma once
// conv2d: torch.nn.functional.conv2d (cross-correlation, zero padding, stride, dilation, groups,
// optional bias) on NCHW float32 tensors.
#include <cstdint>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

struct Conv2dOptions {
  CVATTN_ARG(Pair2, stride) = Pair2(1);
  CVATTN_ARG(Pair2, padding) = Pair2(0);
  CVATTN_ARG(Pair2, dilation) = Pair2(1);
  CVATTN_ARG(std::int64_t, groups) = 1;
};

// input [N, Cin, H, W] (or unbatched [Cin, H, W]), weight [Cout, Cin/groups, kh, kw],
// bias [Cout] or undefined. Returns [N, Cout, Ho, Wo] with
// Ho = floor((H + 2*ph - dh*(kh-1) - 1) / sh) + 1 (same for W).
// Fast paths: 1x1 stride-1 unpadded convs are one GEMM; convs with groups == Cin (depthwise,
// any channel multiplier) run as direct loops; everything else is im2col + GEMM over bounded
// chunks of output pixels. One image is split over all threads.
[[nodiscard]] CVATTN_EXPORT Tensor conv2d(const Tensor& input, const Tensor& weight,
                                          const Tensor& bias = {},
                                          const Conv2dOptions& options = {});

}  // namespace cvattn::functional

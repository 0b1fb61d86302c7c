#pragma once
// Deformable convolution: torchvision.ops.deform_conv2d (DCNv1 without a mask, DCNv2 with one)
// on NCHW float32 tensors (docs/modules.md §10.1), and the sampling positions it reads.
#include <cstdint>
#include <opencv2/core/types.hpp>
#include <vector>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

struct DeformConv2dOptions {
  CVATTN_ARG(Pair2, stride) = Pair2(1);
  CVATTN_ARG(Pair2, padding) = Pair2(0);
  CVATTN_ARG(Pair2, dilation) = Pair2(1);
};

// Upper bound on the column workspace deform_conv2d allocates for one call, whatever the input
// and thread count: the deformed im2col matrix is built and multiplied in chunks of output pixels
// (and, for very deep kernels, of its reduction dimension) that together stay under this size.
inline constexpr std::int64_t kDeformConvWorkspaceCap = std::int64_t{64} << 20;  // 64 MiB

// torchvision.ops.deform_conv2d(input, offset, weight, bias, stride, padding, dilation, mask).
//   input  [N, Cin, H, W]
//   offset [N, 2*Go*kh*kw, Ho, Wo]: (dy, dx) per offset group g and kernel tap k = i*kw + j at
//          channels g*2*kh*kw + 2k and + 2k + 1; Go (offset groups) = offset.shape[1]/(2*kh*kw)
//          and input channel c uses group c / (Cin/Go)
//   weight [Cout, Cin/Gw, kh, kw]: Gw (weight groups) = Cin / weight.shape[1], as Conv2d groups
//   bias   [Cout] or undefined (zeros)
//   mask   [N, Go*kh*kw, Ho, Wo] or undefined (all ones; DCNv1); multiplies each sample raw
// Returns [N, Cout, Ho, Wo] with Ho = floor((H + 2*ph - dh*(kh-1) - 1) / sh) + 1 (same for W).
// Tap (i, j) of output (oy, ox) samples the input bilinearly at pixel coordinates
// (oy*sh - ph + i*dh + dy, ox*sw - pw + j*dw + dx); a sample with y <= -1, y >= H, x <= -1 or
// x >= W reads 0, as does a non-finite one (NaN/inf offsets), and corners outside the image read
// 0. Throws ShapeError/ValueError naming the tensor on any inconsistent shape or option.
//
// Memory: besides the output, one call allocates a channels-last copy of one input image
// (Cin*H*W floats), the reordered weight, and at most kDeformConvWorkspaceCap bytes of column
// workspace (in practice 256 KiB per thread).
[[nodiscard]] CVATTN_EXPORT Tensor deform_conv2d(const Tensor& input, const Tensor& offset,
                                                 const Tensor& weight, const Tensor& bias = {},
                                                 const Tensor& mask = {},
                                                 const DeformConv2dOptions& options = {});

// Where deform_conv2d samples: for each output location in `points` (cv::Point(ox, oy)), the
// kh*kw sampling positions in input pixel coordinates, (y, x) = (oy*sh - ph + i*dh + dy,
// ox*sw - pw + j*dw + dx), for tap k = i*kw + j. offset is [N, 2*Go*kh*kw, Ho, Wo] (the `offset`
// map of the DeformConv2d module); kernel_size is (kh, kw). Returns [N, Go, P, kh*kw, 2] holding
// (y, x); an empty `points` means every output location in row-major order (P = Ho*Wo).
// Positions are returned as computed, also when they fall outside the image.
// ShapeError when offset's channels are not a multiple of 2*kh*kw or a point lies outside
// [0, Wo) x [0, Ho).
[[nodiscard]] CVATTN_EXPORT Tensor sampling_positions(const Tensor& offset, Pair2 kernel_size,
                                                      const std::vector<cv::Point>& points = {},
                                                      const DeformConv2dOptions& options = {});

}  // namespace cvattn::functional

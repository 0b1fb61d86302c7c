#pragma once
// conv2d: torch.nn.functional.conv2d (cross-correlation, zero padding, stride, dilation, groups,
// optional bias) on NCHW float32 tensors.
#include <cstdint>
#include <memory>
#include <vector>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/activation.hpp"

namespace cvattn::detail {
class PackedA;  // functional/detail/gemm.hpp (private)
}  // namespace cvattn::detail

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

// A conv2d weight prepared once for repeated calls (ncnn and ONNX Runtime prepack weights at
// load the same way): when the kernel can take conv2d's Winograd path (3x3, stride 1, dilation
// 1, at least 8 input and output channels per group; or dilation d in [2, 16] with padding d,
// which conv2d runs as 3x3 convs of dilation 1 over the d*d polyphase sub-images) its transformed
// kernels are kept here instead of being computed on every call, and a kernel that takes a
// matrix product (im2col, wide 1x1) is kept packed for it. Each is made on first use, by the
// first call that takes its path (or the accessor), once, safely from concurrent calls: a network
// keeps only what its input sizes use (a transform is 16/9 or 36/9 of the weight,
// docs/performance.md). It shares the weight's storage: after changing those values in place,
// prepare it again (the transforms and the packed copy would be stale).
class CVATTN_EXPORT Conv2dWeight {
 public:
  Conv2dWeight() = default;
  // weight [Cout, Cin/groups, kh, kw]; ShapeError / ValueError as conv2d for bad weights or
  // options.
  Conv2dWeight(const Tensor& weight, const Conv2dOptions& options);
  [[nodiscard]] const Tensor& weight() const noexcept { return weight_; }
  [[nodiscard]] const Conv2dOptions& options() const noexcept { return options_; }
  // [16, Cout, Cin/groups], F(2x2, 3x3)'s G k G^T per tile position; undefined when the
  // kernel cannot take the Winograd path.
  [[nodiscard]] const Tensor& winograd() const;
  // [36, Cout, Cin/groups], the same for F(4x4, 3x3), and the weights' part of the bound that
  // decides between the two (docs/functional.md); defined with winograd().
  [[nodiscard]] const Tensor& winograd43() const;
  [[nodiscard]] float winograd_scale() const noexcept { return winograd_scale_; }
  // Internal: per group, the weight packed for conv2d's matrix product where that product is
  // cvattn's own (docs/performance.md#matrix-products), else null; `transposed`: for products
  // computed as their transpose (few output positions). Each form is made on first use.
  [[nodiscard]] const std::vector<::cvattn::detail::PackedA>* gemm_panels(
      bool transposed = false) const;
  // Internal: winograd43() of each (position, group) packed for the matrix product
  // ([36 * groups], position-major), for kernels whose Winograd products run on it; null where
  // the product is not cvattn's own. Made without keeping winograd43() itself.
  [[nodiscard]] const std::vector<::cvattn::detail::PackedA>* winograd43_panels() const;

 private:
  struct Lazy;  // what is made on first use (conv.cpp)
  Tensor weight_;
  Conv2dOptions options_;
  bool winograd_ok_ = false;
  float winograd_scale_ = 0.0f;
  std::shared_ptr<Lazy> lazy_;
};

// conv2d(input, weight.weight(), bias, weight.options()), with the prepared transform used when
// this input takes the Winograd path; the same values as that call. With `act`, the activation
// is fused: each block of output gets it right after being written, while still in cache,
// instead of in a second pass over the whole tensor; the values equal
// activation(conv2d(input, weight, bias), act) exactly.
[[nodiscard]] CVATTN_EXPORT Tensor conv2d(const Tensor& input, const Conv2dWeight& weight,
                                          const Tensor& bias = {},
                                          ActLayer act = ActLayer::identity);

}  // namespace cvattn::functional

#pragma once
// 2-D pooling with PyTorch's semantics: max_pool2d, avg_pool2d, adaptive_avg_pool2d,
// adaptive_max_pool2d and global pooling, on [N, C, H, W] (or unbatched [C, H, W]) tensors.
//
// Output size of max/avg pooling (PyTorch's rule, per axis):
//   out = floor((in + 2*pad - dilation*(kernel-1) - 1 + (ceil_mode ? stride-1 : 0)) / stride) + 1
//   and, in ceil_mode, out -= 1 when the last window would start at or after in + pad.
// Max pooling ignores padding (it never wins) and propagates NaN like PyTorch.
#include <cstdint>
#include <optional>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

struct MaxPool2dOptions {
  explicit MaxPool2dOptions(Pair2 kernel_size) : kernel_size_(kernel_size) {}
  CVATTN_ARG(Pair2, kernel_size);

 public:
  // Defaults to kernel_size, as PyTorch's stride=None.
  MaxPool2dOptions& stride(Pair2 value) {
    stride_ = value;
    return *this;
  }
  [[nodiscard]] Pair2 stride() const noexcept { return stride_.value_or(kernel_size_); }
  CVATTN_ARG(Pair2, padding) = Pair2(0);  // at most kernel_size / 2
  CVATTN_ARG(Pair2, dilation) = Pair2(1);
  CVATTN_ARG(bool, ceil_mode) = false;

 private:
  std::optional<Pair2> stride_;
};

struct AvgPool2dOptions {
  explicit AvgPool2dOptions(Pair2 kernel_size) : kernel_size_(kernel_size) {}
  CVATTN_ARG(Pair2, kernel_size);

 public:
  // Defaults to kernel_size, as PyTorch's stride=None.
  AvgPool2dOptions& stride(Pair2 value) {
    stride_ = value;
    return *this;
  }
  [[nodiscard]] Pair2 stride() const noexcept { return stride_.value_or(kernel_size_); }
  // Divide by this instead of the window size (non-zero), as PyTorch's divisor_override.
  AvgPool2dOptions& divisor_override(std::int64_t value) {
    divisor_override_ = value;
    return *this;
  }
  [[nodiscard]] const std::optional<std::int64_t>& divisor_override() const noexcept {
    return divisor_override_;
  }
  CVATTN_ARG(Pair2, padding) = Pair2(0);  // at most kernel_size / 2
  CVATTN_ARG(bool, ceil_mode) = false;
  // Count padded zeros in the divisor (PyTorch's default).
  CVATTN_ARG(bool, count_include_pad) = true;

 private:
  std::optional<Pair2> stride_;
  std::optional<std::int64_t> divisor_override_;
};

[[nodiscard]] CVATTN_EXPORT Tensor max_pool2d(const Tensor& input, const MaxPool2dOptions& options);
[[nodiscard]] CVATTN_EXPORT Tensor avg_pool2d(const Tensor& input, const AvgPool2dOptions& options);

// Output cell (i, j) pools rows [floor(i*H/Ho), ceil((i+1)*H/Ho)) and the matching columns, so
// cells may overlap when the sizes do not divide. output_size must be positive.
[[nodiscard]] CVATTN_EXPORT Tensor adaptive_avg_pool2d(const Tensor& input, Pair2 output_size);
[[nodiscard]] CVATTN_EXPORT Tensor adaptive_max_pool2d(const Tensor& input, Pair2 output_size);

// Mean / maximum over each whole plane: [N, C, H, W] -> [N, C, 1, 1] (adaptive pooling to 1).
[[nodiscard]] CVATTN_EXPORT Tensor global_avg_pool2d(const Tensor& input);
[[nodiscard]] CVATTN_EXPORT Tensor global_max_pool2d(const Tensor& input);

}  // namespace cvattn::functional

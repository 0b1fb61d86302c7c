#pragma once
// Pooling modules (no state_dict keys) over the functional kernels in functional/pooling.hpp.
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/pooling.hpp"

namespace cvattn {

class CVATTN_EXPORT MaxPool2d final : public UnaryModule {
 public:
  // ValueError on invalid options (checked here, not at the first forward).
  explicit MaxPool2d(const functional::MaxPool2dOptions& options);
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const functional::MaxPool2dOptions& options() const noexcept { return options_; }

 private:
  functional::MaxPool2dOptions options_;
};

class CVATTN_EXPORT AvgPool2d final : public UnaryModule {
 public:
  explicit AvgPool2d(const functional::AvgPool2dOptions& options);
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "AvgPool2d(kernel_size=3, stride=2, padding=1)"
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const functional::AvgPool2dOptions& options() const noexcept { return options_; }

 private:
  functional::AvgPool2dOptions options_;
};

class CVATTN_EXPORT AdaptiveAvgPool2d final : public UnaryModule {
 public:
  explicit AdaptiveAvgPool2d(Pair2 output_size);
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "AdaptiveAvgPool2d(output_size=1)"
  [[nodiscard]] std::string describe() const override;

 private:
  Pair2 output_size_;
};

class CVATTN_EXPORT AdaptiveMaxPool2d final : public UnaryModule {
 public:
  explicit AdaptiveMaxPool2d(Pair2 output_size);
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "AdaptiveMaxPool2d(output_size=(7, 7))"
  [[nodiscard]] std::string describe() const override;

 private:
  Pair2 output_size_;
};

}  // namespace cvattn

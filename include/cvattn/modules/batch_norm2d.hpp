#pragma once
// BatchNorm2d in inference mode (running statistics), with PyTorch's state_dict keys `weight`,
// `bias` (only when affine), `running_mean`, `running_var` [C] and the integer buffer
// `num_batches_tracked` [] (accepted and ignored; may be absent).
#include <cstdint>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

struct CVATTN_EXPORT BatchNorm2dOptions {
  explicit BatchNorm2dOptions(std::int64_t num_features) : num_features_(num_features) {}
  CVATTN_ARG(std::int64_t, num_features);
  CVATTN_ARG(double, eps) = 1e-5;
  CVATTN_ARG(bool, affine) = true;

 public:
  // num_features from `<prefix>running_mean`, affine from whether `<prefix>weight` exists; eps
  // cannot be inferred and stays 1e-5.
  [[nodiscard]] static BatchNorm2dOptions from_state_dict(const StateDict& dict,
                                                          const std::string& prefix = "");
};

class CVATTN_EXPORT BatchNorm2d final : public UnaryModule {
 public:
  // Starts as PyTorch's fresh module: weight 1, bias 0, running_mean 0, running_var 1.
  explicit BatchNorm2d(const BatchNorm2dOptions& options);

  // [N, C, H, W] -> same: (x - running_mean) / sqrt(running_var + eps) * weight + bias.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "BatchNorm2d(64, eps=1e-05, affine=True)"
  [[nodiscard]] std::string describe() const override;

  [[nodiscard]] const BatchNorm2dOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Tensor& weight() const noexcept { return weight_; }
  [[nodiscard]] const Tensor& bias() const noexcept { return bias_; }
  [[nodiscard]] const Tensor& running_mean() const noexcept { return running_mean_; }
  [[nodiscard]] const Tensor& running_var() const noexcept { return running_var_; }

 private:
  BatchNorm2dOptions options_;
  Tensor weight_, bias_, running_mean_, running_var_;
};

}  // namespace cvattn

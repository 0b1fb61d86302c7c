#pragma once
// Normalisation layers with PyTorch's / timm's state_dict keys `weight` and `bias` (present
// only with an elementwise affine): torch.nn.LayerNorm, timm's channels-first LayerNorm2d and
// torch.nn.GroupNorm. The statistics are computed from each input (no running buffers).
#include <cstdint>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

struct CVATTN_EXPORT LayerNormOptions {
  // The trailing dims normalised over, e.g. {384} for a ViT's tokens.
  explicit LayerNormOptions(Shape normalized_shape)
      : normalized_shape_(std::move(normalized_shape)) {}
  CVATTN_ARG(Shape, normalized_shape);
  CVATTN_ARG(double, eps) = 1e-5;
  CVATTN_ARG(bool, elementwise_affine) = true;

 public:
  // normalized_shape from `<prefix>weight`'s shape (elementwise_affine); eps stays 1e-5. A
  // dict without `<prefix>weight` cannot tell normalized_shape: ValueError.
  [[nodiscard]] static LayerNormOptions from_state_dict(const StateDict& dict,
                                                        const std::string& prefix = "");
};

// torch.nn.LayerNorm: F.layer_norm over the trailing normalized_shape dims.
class CVATTN_EXPORT LayerNorm final : public UnaryModule {
 public:
  // Starts as PyTorch's fresh module: weight 1, bias 0.
  explicit LayerNorm(const LayerNormOptions& options);
  // [*, normalized_shape...] -> same.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "LayerNorm((384,), eps=1e-05, elementwise_affine=True)"
  [[nodiscard]] std::string describe() const override;

  [[nodiscard]] const LayerNormOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Tensor& weight() const noexcept { return weight_; }
  [[nodiscard]] const Tensor& bias() const noexcept { return bias_; }

 private:
  LayerNormOptions options_;
  Tensor weight_, bias_;
};

struct CVATTN_EXPORT LayerNorm2dOptions {
  explicit LayerNorm2dOptions(std::int64_t num_channels) : num_channels_(num_channels) {}
  CVATTN_ARG(std::int64_t, num_channels);
  CVATTN_ARG(double, eps) = 1e-6;  // timm's default
  CVATTN_ARG(bool, affine) = true;

 public:
  // num_channels from `<prefix>weight` [C] (affine); eps stays 1e-6. ValueError without it.
  [[nodiscard]] static LayerNorm2dOptions from_state_dict(const StateDict& dict,
                                                          const std::string& prefix = "");
};

// timm.layers.LayerNorm2d: layer norm over C of [N, C, H, W] at every pixel.
class CVATTN_EXPORT LayerNorm2d final : public UnaryModule {
 public:
  explicit LayerNorm2d(const LayerNorm2dOptions& options);
  // [N, C, H, W] -> same.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "LayerNorm2d((64,), eps=1e-06, elementwise_affine=True)", as timm prints it.
  [[nodiscard]] std::string describe() const override;

  [[nodiscard]] const LayerNorm2dOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Tensor& weight() const noexcept { return weight_; }
  [[nodiscard]] const Tensor& bias() const noexcept { return bias_; }

 private:
  LayerNorm2dOptions options_;
  Tensor weight_, bias_;
};

struct CVATTN_EXPORT GroupNormOptions {
  GroupNormOptions(std::int64_t num_groups, std::int64_t num_channels)
      : num_groups_(num_groups), num_channels_(num_channels) {}
  CVATTN_ARG(std::int64_t, num_groups);
  CVATTN_ARG(std::int64_t, num_channels);
  CVATTN_ARG(double, eps) = 1e-5;
  CVATTN_ARG(bool, affine) = true;

 public:
  // num_channels from `<prefix>weight` [C]; num_groups cannot be inferred and is given.
  [[nodiscard]] static GroupNormOptions from_state_dict(const StateDict& dict,
                                                        std::int64_t num_groups,
                                                        const std::string& prefix = "");
};

// torch.nn.GroupNorm.
class CVATTN_EXPORT GroupNorm final : public UnaryModule {
 public:
  explicit GroupNorm(const GroupNormOptions& options);
  // [N, C, ...] -> same.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "GroupNorm(32, 64, eps=1e-05, affine=True)"
  [[nodiscard]] std::string describe() const override;

  [[nodiscard]] const GroupNormOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Tensor& weight() const noexcept { return weight_; }
  [[nodiscard]] const Tensor& bias() const noexcept { return bias_; }

 private:
  GroupNormOptions options_;
  Tensor weight_, bias_;
};

}  // namespace cvattn

#pragma once
// CondConv2d: timm's CondConv2d (layers/cond_conv2d.py), conditionally parameterised
// convolution (Yang et al., NeurIPS 2019; docs/gates.md). The routing weights are an input,
// computed outside the layer; CondConvRouting is timm's CondConvResidual routing beside it:
//
//   routing = sigmoid(routing_fn(mean_hw x))                 CondConvRouting, [N, K]
//   W~[n]   = sum_k routing[n, k] weight[k]   (weight stored flattened [K, Co*Ci/g*kh*kw])
//   y[n]    = conv2d(x[n], W~[n], b~[n], stride, padding, dilation, groups)
//
// padding defaults to timm's '' : ((stride - 1) + dilation * (k - 1)) // 2 per axis.
// state_dict keys: weight [K, Co*Ci/groups*kh*kw], bias [K, Co] (bias only); CondConvRouting
// (nn.Linear, `routing_fn` in CondConvResidual): weight [K, C], bias [K].
#include <cstdint>
#include <optional>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT CondConv2dOptions {
 public:
  CondConv2dOptions(std::int64_t in_channels, std::int64_t out_channels, Pair2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}

  // The flattened weight holds neither Ci nor the kernel size, so they are given (groups too):
  // num_experts and bias from the keys under prefix, Co from bias [K, Co] when present, else
  // from weight's row length / (Ci/groups * kh * kw). ValueError naming the key and the
  // given sizes when they do not fit the weight.
  [[nodiscard]] static CondConv2dOptions from_state_dict(const StateDict& dict,
                                                         std::int64_t in_channels,
                                                         Pair2 kernel_size = Pair2(3),
                                                         std::int64_t groups = 1,
                                                         const std::string& prefix = "");

  // padding when set, else timm's '' padding for the kernel, stride and dilation.
  [[nodiscard]] Pair2 effective_padding() const;
  CondConv2dOptions& padding(Pair2 value) {
    padding_ = value;
    return *this;
  }

  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, out_channels);
  CVATTN_ARG(Pair2, kernel_size);
  CVATTN_ARG(Pair2, stride) = Pair2(1);
  CVATTN_ARG(Pair2, dilation) = Pair2(1);
  CVATTN_ARG(std::int64_t, groups) = 1;
  CVATTN_ARG(bool, bias) = false;
  CVATTN_ARG(std::int64_t, num_experts) = 4;

 private:
  std::optional<Pair2> padding_;
};

class CVATTN_EXPORT CondConv2d final : public Module {
 public:
  // ValueError on invalid options.
  explicit CondConv2d(const CondConv2dOptions& options);

  // x [N, Ci, H, W], routing_weights [N, K] -> y [N, Co, Ho, Wo].
  [[nodiscard]] Tensor forward(const Tensor& x, const Tensor& routing_weights) const;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const CondConv2dOptions& options() const noexcept { return options_; }

 private:
  CondConv2dOptions options_;
  Tensor weight_, bias_;
};

class CVATTN_EXPORT CondConvRoutingOptions {
 public:
  CondConvRoutingOptions(std::int64_t in_channels, std::int64_t num_experts)
      : in_channels_(in_channels), num_experts_(num_experts) {}
  // C and K from `<prefix>weight` [K, C]. ValueError naming the key when missing or malformed.
  [[nodiscard]] static CondConvRoutingOptions from_state_dict(const StateDict& dict,
                                                              const std::string& prefix = "");
  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, num_experts);
};

class CVATTN_EXPORT CondConvRouting final : public UnaryModule {
 public:
  explicit CondConvRouting(const CondConvRoutingOptions& options);
  // x [N, C, H, W] (H, W >= 1) -> routing weights [N, K] in (0, 1).
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  CondConvRoutingOptions options_;
  Tensor weight_, bias_;
};

}  // namespace cvattn

#pragma once
// DynamicConv2d: dynamic convolution (Chen et al., CVPR 2020, "Dynamic Convolution: Attention
// over Convolution Kernels"; docs/modules.md §17), in the layout of the widely used public port's
// Dynamic_conv2d (docs/gates.md):
//
//   pi[n] = softmax(fc2(ReLU(fc1(mean_hw x[n]))) / temperature)     [N, K], map "attention"
//   W~[n] = sum_k pi[n, k] weight[k],  b~[n] = sum_k pi[n, k] bias[k]
//   y[n]  = conv2d(x[n], W~[n], b~[n], stride, padding, dilation, groups)
//
// state_dict keys: weight [K, Co, Ci/groups, kh, kw], bias [K, Co] (optional),
// attention.fc1.weight [hidden, Ci, 1, 1], attention.fc2.weight [K, hidden, 1, 1],
// attention.fc2.bias [K].
#include <cstdint>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT DynamicConv2dOptions {
 public:
  DynamicConv2dOptions(std::int64_t in_channels, std::int64_t out_channels, Pair2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}

  // K, Co, Ci, the kernel size, groups (Ci over weight's Ci/groups), hidden and bias from the
  // weights under prefix; stride, padding, dilation and temperature keep their defaults.
  // ValueError naming the key on a missing or malformed tensor.
  [[nodiscard]] static DynamicConv2dOptions from_state_dict(const StateDict& dict,
                                                            const std::string& prefix = "");

  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, out_channels);
  CVATTN_ARG(Pair2, kernel_size);
  CVATTN_ARG(std::int64_t, num_kernels) = 4;  // K
  CVATTN_ARG(std::int64_t, hidden) = 0;       // 0: max(Ci / 4, 1)
  CVATTN_ARG(Pair2, stride) = Pair2(1);
  CVATTN_ARG(Pair2, padding) = Pair2(0);
  CVATTN_ARG(Pair2, dilation) = Pair2(1);
  CVATTN_ARG(std::int64_t, groups) = 1;
  CVATTN_ARG(bool, bias) = true;
  CVATTN_ARG(double, temperature) = 1.0;
};

class CVATTN_EXPORT DynamicConv2d final : public UnaryModule {
 public:
  // ValueError on invalid options (sizes, groups not dividing the channels, temperature <= 0).
  explicit DynamicConv2d(const DynamicConv2dOptions& options);

  // x [N, Ci, H, W] (H, W >= 1) -> y [N, Co, Ho, Wo].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, K] (pi).
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const DynamicConv2dOptions& options() const noexcept { return options_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  DynamicConv2dOptions options_;
  std::int64_t hidden_;
  Tensor weight_, bias_, fc1_weight_, fc2_weight_, fc2_bias_;
};

}  // namespace cvattn

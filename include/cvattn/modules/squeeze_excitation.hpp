#pragma once
// SqueezeExcitation: timm's SEModule (layers/squeeze_excite.py), docs/modules.md §2.
//
//   s = mean_hw(x)                  (add_maxpool: 0.5 * mean + 0.5 * max)
//   g = gate(fc2(ReLU(bn(fc1(s)))))  fc1: C -> R, fc2: R -> C (1x1 convs), bn optional
//   y = x * g                        g broadcast over H, W; exposed as map "attention" [N, C]
//
// state_dict keys: fc1.weight [R, C, 1, 1], fc1.bias [R], fc2.weight [C, R, 1, 1], fc2.bias [C]
// (biases only with bias=true), bn.{weight,bias,running_mean,running_var} [R] and
// bn.num_batches_tracked with norm_layer=batch_norm.
#include <cstdint>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/layer_kinds.hpp"

namespace cvattn {

class CVATTN_EXPORT SqueezeExcitationOptions {
 public:
  explicit SqueezeExcitationOptions(std::int64_t channels) : channels_(channels) {}

  // Sizes and switches read off a state_dict's shapes and keys: C and R from fc1.weight (so
  // checkpoints of old timm, R = max(8, C // 16), load too), bias from fc1.bias / fc2.bias,
  // norm_layer from bn.*. add_maxpool and gate_layer leave no trace in the weights and keep
  // their defaults. ValueError naming the key when fc1.weight is missing or not [R, C, 1, 1].
  [[nodiscard]] static SqueezeExcitationOptions from_state_dict(const StateDict& dict,
                                                                const std::string& prefix = "");

  // R: rd_channels if non-zero, else make_divisible(channels * rd_ratio, rd_divisor, 0, 0.0).
  // ValueError on invalid options.
  [[nodiscard]] std::int64_t reduced_channels() const;

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(double, rd_ratio) = 1.0 / 16.0;
  CVATTN_ARG(std::int64_t, rd_channels) = 0;  // 0: computed from rd_ratio (timm's None)
  CVATTN_ARG(std::int64_t, rd_divisor) = 8;
  CVATTN_ARG(bool, add_maxpool) = false;
  CVATTN_ARG(bool, bias) = true;
  CVATTN_ARG(NormLayer, norm_layer) = NormLayer::none;
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::sigmoid;
};

class CVATTN_EXPORT SqueezeExcitation final : public UnaryModule {
 public:
  // Parameters start at zero; load them with load_state_dict. ValueError on invalid options.
  explicit SqueezeExcitation(const SqueezeExcitationOptions& options);

  // x [N, C, H, W] with H, W >= 1 -> y [N, C, H, W]. ShapeError on any other shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus maps "attention" [N, C] (the gate g).
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const SqueezeExcitationOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t reduced_channels() const noexcept { return rd_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  SqueezeExcitationOptions options_;
  std::int64_t rd_;
  Tensor fc1_weight_, fc1_bias_, fc2_weight_, fc2_bias_;
  Tensor bn_weight_, bn_bias_, bn_mean_, bn_var_;
};

}  // namespace cvattn

#pragma once
// LightCbam: timm's LightCbamModule (layers/cbam.py), the "lightweight" CBAM that blends the
// average and max pools before one pass through each gate (docs/gates.md):
//
//   s  = 0.5 * mean_hw(x) + 0.5 * amax_hw(x)                          [N, C]
//   g  = sigmoid(fc2(ReLU(fc1(s))))     fc1: C -> R, fc2: R -> C, 1x1 convs, bias with mlp_bias
//   x1 = x * g                          map "channel_attention" [N, C]
//   m  = 0.5 * mean_c(x1) + 0.5 * amax_c(x1)                          [N, 1, H, W]
//   a  = sigmoid(bn(conv_kxk(m)))       1 -> 1 channel, padding (k - 1) / 2, no bias
//   y  = x1 * a                         map "spatial_attention" [N, 1, H, W]
// (x1 is never stored: the spatial pooling and the output read x and g in one pass each.)
//
// timm builds both gates as sigmoids whatever gate_layer says (LightChannelAttn calls
// F.sigmoid; LightSpatialAttn is built without it), so gate_layer is accepted and, as in timm,
// changes nothing.
// state_dict keys: channel.fc1.weight [R, C, 1, 1], channel.fc2.weight [C, R, 1, 1] (+ .bias
// with mlp_bias), spatial.conv.conv.weight [1, 1, k, k], spatial.conv.bn.{weight, bias,
// running_mean, running_var, num_batches_tracked} [1].
#include <cstdint>
#include <memory>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/layer_kinds.hpp"

namespace cvattn {

class CVATTN_EXPORT LightCbamOptions {
 public:
  LightCbamOptions(std::int64_t channels, std::int64_t rd_channels)
      : channels_(channels), rd_channels_(rd_channels) {}

  // C and R from `<prefix>channel.fc1.weight`, mlp_bias from its bias, the spatial kernel size
  // from `<prefix>spatial.conv.conv.weight`. ValueError naming the key when one is missing or
  // malformed.
  [[nodiscard]] static LightCbamOptions from_state_dict(const StateDict& dict,
                                                        const std::string& prefix = "");

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(std::int64_t, rd_channels);
  CVATTN_ARG(std::int64_t, spatial_kernel_size) = 7;
  CVATTN_ARG(bool, mlp_bias) = false;
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::sigmoid;  // unused, as in timm (see above)
};

class CVATTN_EXPORT LightCbam final : public UnaryModule {
 public:
  // ValueError on non-positive sizes or an even spatial kernel (timm's padding would shrink
  // the map).
  explicit LightCbam(const LightCbamOptions& options);

  // x [N, C, H, W], H, W >= 1 -> y of that shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus maps "channel_attention" [N, C] and "spatial_attention" [N, 1, H, W].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const LightCbamOptions& options() const noexcept { return options_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  LightCbamOptions options_;
  std::shared_ptr<Conv2d> fc1_, fc2_, spatial_conv_;
  std::shared_ptr<BatchNorm2d> spatial_bn_;
};

}  // namespace cvattn

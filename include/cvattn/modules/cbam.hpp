#pragma once
// Cbam: timm's CbamModule (layers/cbam.py), docs/modules.md §4: channel attention, then spatial
// attention computed from the channel-refined tensor.
//
//   channel:  g = gate(MLP(mean_hw x) + MLP(max_hw x)),  MLP = fc2(ReLU(fc1(.))) shared
//             (with mlp_bias, fc2.bias is added in both branches);  x1 = x * g
//   spatial:  d = [mean_c x1, max_c x1]  [N, 2, H, W]
//             s = gate(BN(conv_kxk(d)))   zero padding (k-1)/2, no conv bias, BN inference
//             y = x1 * s
// Maps: "channel_attention" [N, C] (g) and "spatial_attention" [N, 1, H, W] (s).
//
// state_dict keys: channel.fc1.weight [R, C, 1, 1], channel.fc2.weight [C, R, 1, 1]
// (+ channel.fc1.bias [R], channel.fc2.bias [C] with mlp_bias), spatial.conv.conv.weight
// [1, 2, k, k], spatial.conv.bn.{weight,bias,running_mean,running_var} [1],
// spatial.conv.bn.num_batches_tracked [].
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

class CVATTN_EXPORT CbamOptions {
 public:
  explicit CbamOptions(std::int64_t channels) : channels_(channels) {}

  // C and R from channel.fc1.weight [R, C, 1, 1] (old timm's R = C // 16 loads too), mlp_bias
  // from channel.fc1.bias / channel.fc2.bias, spatial_kernel_size from spatial.conv.conv.weight
  // [1, 2, k, k]. gate_layer keeps its default. ValueError naming the key when a tensor is
  // missing or malformed.
  [[nodiscard]] static CbamOptions from_state_dict(const StateDict& dict,
                                                   const std::string& prefix = "");

  // R: rd_channels if non-zero, else make_divisible(channels * rd_ratio, rd_divisor, 0, 0.0)
  // (with the default divisor 1: max(1, trunc(C / 16 + 0.5))). ValueError on invalid options.
  [[nodiscard]] std::int64_t reduced_channels() const;

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(double, rd_ratio) = 1.0 / 16.0;
  CVATTN_ARG(std::int64_t, rd_channels) = 0;  // 0: computed from rd_ratio (timm's None)
  CVATTN_ARG(std::int64_t, rd_divisor) = 1;
  CVATTN_ARG(std::int64_t, spatial_kernel_size) = 7;  // odd
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::sigmoid;
  CVATTN_ARG(bool, mlp_bias) = false;
};

class CVATTN_EXPORT Cbam final : public UnaryModule {
 public:
  // Parameters start at zero (the BatchNorm as PyTorch's fresh one: weight 1, running_var 1);
  // load them with load_state_dict. ValueError on invalid options.
  explicit Cbam(const CbamOptions& options);

  // x [N, C, H, W] with H, W >= 1 -> y [N, C, H, W]. ShapeError on any other shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus maps "channel_attention" [N, C] and "spatial_attention" [N, 1, H, W].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const CbamOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t reduced_channels() const noexcept { return rd_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  CbamOptions options_;
  std::int64_t rd_;
  Tensor fc1_weight_, fc1_bias_, fc2_weight_, fc2_bias_;
  Tensor conv_weight_, bn_weight_, bn_bias_, bn_mean_, bn_var_;
};

}  // namespace cvattn

#pragma once
// CoordAttn: timm's CoordAttn (layers/coord_attn.py), coordinate attention (Hou et al., CVPR
// 2021; docs/gates.md):
//
//   x_h = mean_w(x) [N, C, H],  x_w = mean_h(x) [N, C, W]      (strip pooling)
//   z_* = act(bn1(conv1(x_*)))                 conv1: C -> R, 1x1, shared by both strips
//   a_h = gate(conv_h(z_h)) [N, C, H],  a_w = gate(conv_w(z_w)) [N, C, W]   (R -> C, 1x1)
//   y   = x * a_w * a_h  (+ x with has_skip)   maps "attention_h", "attention_w"
//
// act_layer is hard_swish by default, bn1 an inference BatchNorm2d (optional, norm_layer None
// in timm), the convs biased only with bias=true.
// state_dict keys: conv1.weight [R, C, 1, 1], conv1.bias [R] (bias), bn1.{weight, bias,
// running_mean, running_var, num_batches_tracked} [R] (norm), conv_h.weight [C, R, 1, 1],
// conv_w.weight [C, R, 1, 1], conv_h.bias, conv_w.bias [C] (bias).
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

namespace maps {
inline constexpr const char* kAttentionH = "attention_h";
inline constexpr const char* kAttentionW = "attention_w";
}  // namespace maps

class CVATTN_EXPORT CoordAttnOptions {
 public:
  CoordAttnOptions(std::int64_t channels, std::int64_t rd_channels)
      : channels_(channels), rd_channels_(rd_channels) {}

  // C and R from `<prefix>conv1.weight`, bias from conv1.bias, norm from bn1.*; act_layer,
  // gate_layer and has_skip keep their defaults. ValueError naming the key on a missing or
  // malformed tensor.
  [[nodiscard]] static CoordAttnOptions from_state_dict(const StateDict& dict,
                                                        const std::string& prefix = "");

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(std::int64_t, rd_channels);
  CVATTN_ARG(bool, bias) = false;
  CVATTN_ARG(bool, norm) = true;  // timm's norm_layer=nn.BatchNorm2d
  CVATTN_ARG(ActLayer, act_layer) = ActLayer::hard_swish;
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::sigmoid;
  CVATTN_ARG(bool, has_skip) = false;
};

class CVATTN_EXPORT CoordAttn final : public UnaryModule {
 public:
  explicit CoordAttn(const CoordAttnOptions& options);

  // x [N, C, H, W], H, W >= 1 -> y of that shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus maps "attention_h" [N, C, H] and "attention_w" [N, C, W].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const CoordAttnOptions& options() const noexcept { return options_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  CoordAttnOptions options_;
  std::shared_ptr<Conv2d> conv1_, conv_h_, conv_w_;
  std::shared_ptr<BatchNorm2d> bn1_;
};

}  // namespace cvattn

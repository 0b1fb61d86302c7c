#pragma once
// DeformConv2d: mmcv's DeformConv2dPack (DCNv1) and ModulatedDeformConv2dPack (DCNv2), a
// deformable convolution with its own offset-predicting conv `conv_offset` (docs/modules.md §10.2,
// §10.3). state_dict keys, exactly mmcv's:
//   weight [out, in/groups, kh, kw]
//   bias [out]                               (DCNv2 only, optional; DCNv1 never has one)
//   conv_offset.weight [C, in, kh, kw], conv_offset.bias [C]
//     C = 2*deform_groups*kh*kw (DCNv1) or 3*deform_groups*kh*kw (DCNv2)
// Checkpoints of old mmdet/mmcv versions that keep the offset conv as a sibling
// `<layer>_offset.*` key of a parent module are not recognised: rename those keys to
// `<layer>.conv_offset.*` before loading.
#include <cstdint>
#include <memory>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/conv2d.hpp"

namespace cvattn {

struct CVATTN_EXPORT DeformConv2dOptions {
  DeformConv2dOptions(std::int64_t in_channels, std::int64_t out_channels, Pair2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, out_channels);
  CVATTN_ARG(Pair2, kernel_size);
  CVATTN_ARG(Pair2, stride) = Pair2(1);
  CVATTN_ARG(Pair2, padding) = Pair2(0);
  CVATTN_ARG(Pair2, dilation) = Pair2(1);
  CVATTN_ARG(std::int64_t, groups) = 1;
  CVATTN_ARG(std::int64_t, deform_groups) = 1;
  // DCNv2 (ModulatedDeformConv2dPack): conv_offset also predicts a mask, passed through sigmoid.
  CVATTN_ARG(bool, modulated) = false;
  // Only with modulated (mmcv's DCNv2 default is bias=True; DCNv1 has none).
  CVATTN_ARG(bool, bias) = false;

 public:
  // From `<prefix>weight` and `<prefix>conv_offset.weight`: in_channels (conv_offset's input
  // channels), out_channels and kernel_size (weight), groups (in / weight.shape[1]), DCNv1 or
  // DCNv2 (conv_offset's output channels: 2 or 3 times deform_groups*kh*kw; any other count is a
  // ValueError naming conv_offset.weight) and bias (whether `<prefix>bias` exists).
  // deform_groups cannot be inferred and must be given; stride, padding and dilation stay at their
  // defaults.
  [[nodiscard]] static DeformConv2dOptions from_state_dict(const StateDict& dict,
                                                           std::int64_t deform_groups = 1,
                                                           const std::string& prefix = "");
  // The same with the library-wide argument order (dict, prefix, extras...).
  [[nodiscard]] static DeformConv2dOptions from_state_dict(const StateDict& dict,
                                                           const std::string& prefix,
                                                           std::int64_t deform_groups = 1) {
    return from_state_dict(dict, deform_groups, prefix);
  }
};

class CVATTN_EXPORT DeformConv2d final : public UnaryModule {
 public:
  // ValueError on non-positive sizes, groups or deform_groups that do not divide the channels,
  // or a bias without modulated. All parameters start at zero (load weights before use); a zero
  // conv_offset is mmcv's initialisation (untrained: plain conv for DCNv1, 0.5*conv + bias for
  // DCNv2).
  explicit DeformConv2d(const DeformConv2dOptions& options);

  // [N, in, H, W] -> [N, out, Ho, Wo].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The output and the maps `offset` [N, 2*deform_groups*kh*kw, Ho, Wo] (displacements (dy, dx)
  // per tap, in the layout of functional::deform_conv2d) and, for DCNv2, `mask`
  // [N, deform_groups*kh*kw, Ho, Wo] (after sigmoid).
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;
  // "ModulatedDeformConv2dPack(in_channels=64, out_channels=64, kernel_size=(3, 3), ...)"
  [[nodiscard]] std::string describe() const override;

  [[nodiscard]] const DeformConv2dOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Tensor& weight() const noexcept { return weight_; }
  // Undefined without bias.
  [[nodiscard]] const Tensor& bias() const noexcept { return bias_; }
  [[nodiscard]] const Conv2d& conv_offset() const noexcept { return *conv_offset_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  DeformConv2dOptions options_;
  Tensor weight_;
  Tensor bias_;
  std::shared_ptr<Conv2d> conv_offset_;
};

}  // namespace cvattn

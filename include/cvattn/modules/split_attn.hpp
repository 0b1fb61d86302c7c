#pragma once
// SplitAttn: timm's SplitAttn (layers/split_attn.py), ResNeSt's split-attention conv
// (docs/gates.md). One grouped conv makes `radix` splits of C_out channels; their sum is
// pooled and excited into a radix softmax per channel that mixes the splits:
//
//   u   = ReLU(bn0(conv(x)))                    [N, radix * C_out, Ho, Wo], groups * radix
//   s   = mean_hw(sum_r u_r)                    [N, C_out]
//   z   = fc2(ReLU(bn1(fc1(s))))                1x1 convs with groups, C_out -> A -> radix*C_out
//   a   = radix_softmax(z)                      [N, radix, C_out] (sigmoid when radix = 1),
//                                               map "attention"
//   y   = sum_r u_r * a[:, r]                   [N, C_out, Ho, Wo]
//
// state_dict keys: conv.weight [radix*C_out, C_in/(groups*radix), k, k], conv.bias (bias),
// bn0.* [radix*C_out] and bn1.* [A] (norm), fc1.weight [A, C_out/groups, 1, 1], fc1.bias [A],
// fc2.weight [radix*C_out, A/groups, 1, 1], fc2.bias [radix*C_out].
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/conv2d.hpp"

namespace cvattn {

class CVATTN_EXPORT SplitAttnOptions {
 public:
  // attn_channels 0: timm's make_divisible(in * radix * rd_ratio, rd_divisor, min 32).
  SplitAttnOptions(std::int64_t in_channels, std::int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}

  // Sizes from the weights under prefix for the given radix and groups (which the weights
  // only hold as a product): C_out = rows of conv.weight / radix, C_in, k, A, bias and norm.
  // ValueError naming the key and the radix/groups when they disagree with the shapes.
  [[nodiscard]] static SplitAttnOptions from_state_dict(const StateDict& dict,
                                                        const std::string& prefix = "",
                                                        std::int64_t radix = 2,
                                                        std::int64_t groups = 1);

  // padding when set, else kernel_size / 2, as timm's padding=None.
  [[nodiscard]] std::int64_t effective_padding() const {
    return padding_ ? *padding_ : kernel_size_ / 2;
  }
  SplitAttnOptions& padding(std::int64_t value) {
    padding_ = value;
    return *this;
  }

  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, out_channels);
  CVATTN_ARG(std::int64_t, kernel_size) = 3;
  CVATTN_ARG(std::int64_t, stride) = 1;
  CVATTN_ARG(std::int64_t, dilation) = 1;
  CVATTN_ARG(std::int64_t, groups) = 1;
  CVATTN_ARG(std::int64_t, radix) = 2;
  CVATTN_ARG(bool, bias) = false;
  CVATTN_ARG(bool, norm) = false;  // timm's norm_layer (None by default; ResNeSt: BatchNorm2d)
  CVATTN_ARG(std::int64_t, attn_channels) = 0;
  CVATTN_ARG(double, rd_ratio) = 0.25;
  CVATTN_ARG(std::int64_t, rd_divisor) = 8;

 private:
  std::optional<std::int64_t> padding_;
};

class CVATTN_EXPORT SplitAttn final : public UnaryModule {
 public:
  // ValueError on invalid options (sizes, groups * radix not dividing the channels).
  explicit SplitAttn(const SplitAttnOptions& options);

  // x [N, C_in, H, W] -> y [N, C_out, Ho, Wo].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, radix, C_out].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const SplitAttnOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t attn_channels() const noexcept { return attn_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;
  void on_weights_loaded() override;
  void fold();  // bn0 folded into conv (folded_weight_, folded_bias_, prepared_)

  SplitAttnOptions options_;
  std::int64_t attn_;
  std::shared_ptr<Conv2d> conv_, fc1_, fc2_;
  std::shared_ptr<BatchNorm2d> bn0_, bn1_;
  Tensor folded_weight_, folded_bias_;  // with bn0: conv then bn0 as one conv
  functional::Conv2dWeight prepared_;   // folded_weight_, its conv2d transforms made once
};

}  // namespace cvattn

#pragma once
// BatNonLocalAttn: timm's BAT block (layers/non_local_attn.py, after BA-Transform), a grouped
// bilinear attentional transform with a residual connection:
//
//   xl = CNA(x)                     conv1: 1x1 C -> R, BatchNorm, ReLU
//   a  = CNA(xl)                    ba.conv1: R -> G
//   p  = sigmoid(conv_p(adaptive_max_pool(a, (b, 1)))), rows normalised to sum 1   [N, G, b, b]
//   q  = sigmoid(conv_q(adaptive_max_pool(a, (1, b)))), columns normalised to sum 1
//   t  = CNA(bilinear_attn_transform(xl, p, q))    ba.conv2: R -> R
//   y  = CNA(t) + x                 conv2: R -> C (dropout is the identity in inference)
//
// Maps "attention_p", "attention_q" [N, G, b, b] (the row and column mixing matrices before
// timm's kron expansion).
//
// state_dict keys: conv1.conv.weight [R, C, 1, 1], conv1.bn.*, ba.conv1.conv.weight
// [G, R, 1, 1], ba.conv1.bn.*, ba.conv_p.weight [b*b*G, G, b, 1], ba.conv_p.bias,
// ba.conv_q.weight [b*b*G, G, 1, b], ba.conv_q.bias, ba.conv2.conv.weight [R, R, 1, 1],
// ba.conv2.bn.*, conv2.conv.weight [C, R, 1, 1], conv2.bn.* (bn.*: weight, bias,
// running_mean, running_var, num_batches_tracked).
#include <cstdint>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

namespace maps {
inline constexpr const char* kAttentionP = "attention_p";
inline constexpr const char* kAttentionQ = "attention_q";
}  // namespace maps

class CVATTN_EXPORT BatNonLocalAttnOptions {
 public:
  explicit BatNonLocalAttnOptions(std::int64_t in_channels) : in_channels_(in_channels) {}

  // C and R from conv1.conv.weight, groups from ba.conv1.conv.weight, block_size from
  // ba.conv_p.weight. ValueError naming the key when a tensor is missing or malformed.
  [[nodiscard]] static BatNonLocalAttnOptions from_state_dict(const StateDict& dict,
                                                              const std::string& prefix = "");
  // R: rd_channels if non-zero, else make_divisible(C * rd_ratio, rd_divisor).
  [[nodiscard]] std::int64_t reduced_channels() const;

  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, block_size) = 7;
  CVATTN_ARG(std::int64_t, groups) = 2;
  CVATTN_ARG(double, rd_ratio) = 0.25;
  CVATTN_ARG(std::int64_t, rd_channels) = 0;
  CVATTN_ARG(std::int64_t, rd_divisor) = 8;
};

class CVATTN_EXPORT BatNonLocalAttn final : public UnaryModule {
 public:
  explicit BatNonLocalAttn(const BatNonLocalAttnOptions& options);

  // x [N, C, H, W], H and W multiples of block_size -> [N, C, H, W].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus maps "attention_p", "attention_q" [N, groups, b, b].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const BatNonLocalAttnOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t reduced_channels() const noexcept { return rd_; }

 private:
  struct ConvNormAct {
    Tensor weight, bn_weight, bn_bias, bn_mean, bn_var;
  };
  ConvNormAct register_cna(const std::string& name, const Shape& weight_shape);
  [[nodiscard]] static Tensor run_cna(const ConvNormAct& c, const Tensor& x);
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  BatNonLocalAttnOptions options_;
  std::int64_t rd_;
  ConvNormAct conv1_, ba_conv1_, ba_conv2_, conv2_;
  Tensor conv_p_weight_, conv_p_bias_, conv_q_weight_, conv_q_bias_;
};

}  // namespace cvattn

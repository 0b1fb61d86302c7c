#pragma once
// BottleneckAttn: timm's BoTNet self-attention (layers/bottleneck_attn.py), multi-head
// attention over all H*W positions of a fixed-size map with factorised relative-position logits:
//
//   q, k, v = split(qkv(x))                          1x1 conv, [N, heads*Dqk | heads*Dqk | dim_out]
//   A = softmax(q.k * s + rel(q))                    [N, heads, H*W, H*W], s = Dqk^-0.5
//       (scale_pos_embed: softmax((q.k + rel(q)) * s))
//   y = pool(A v)                                    [N, dim_out, H, W]; pool = AvgPool2d(2, 2)
//                                                    when stride == 2
// rel(q)[(y,x),(u,v)] = q . height_rel[H-1+u-y] + q . width_rel[W-1+v-x]
// (functional::rel_pos_self_attention). Map "attention" [N, heads, H*W, H*W].
//
// state_dict keys: qkv.weight [2*heads*Dqk + dim_out, dim, 1, 1], qkv.bias (qkv_bias),
// pos_embed.height_rel [2H-1, Dqk], pos_embed.width_rel [2W-1, Dqk].
#include <cstdint>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT BottleneckAttnOptions {
 public:
  BottleneckAttnOptions(std::int64_t dim, Pair2 feat_size) : dim_(dim), feat_size_(feat_size) {}

  // dim from qkv.weight, dim_head (Dqk) and feat_size from pos_embed.*_rel, qkv_bias from
  // qkv.bias, and qkv_channels (so dim_out follows from num_heads, which the weights cannot
  // tell). ValueError naming the key when a tensor is missing or malformed.
  [[nodiscard]] static BottleneckAttnOptions from_state_dict(const StateDict& dict,
                                                             const std::string& prefix = "");

  // Resolved widths; ValueError on invalid options (timm's asserts).
  struct Dims {
    std::int64_t dim_out, dim_head_qk, dim_head_v;
  };
  [[nodiscard]] Dims dims() const;

  CVATTN_ARG(std::int64_t, dim);
  CVATTN_ARG(Pair2, feat_size);
  CVATTN_ARG(std::int64_t, dim_out) = 0;  // 0: dim (timm's None)
  CVATTN_ARG(std::int64_t, stride) = 1;   // 1 or 2
  CVATTN_ARG(std::int64_t, num_heads) = 4;
  CVATTN_ARG(std::int64_t, dim_head) = 0;  // 0: make_divisible(dim_out * qk_ratio, 8) / heads
  CVATTN_ARG(double, qk_ratio) = 1.0;
  CVATTN_ARG(bool, qkv_bias) = false;
  CVATTN_ARG(bool, scale_pos_embed) = false;
  // Output channels of qkv as read from a state_dict (0: unknown); when set, dim_out is
  // qkv_channels - 2 * num_heads * dim_head and must agree with an explicit dim_out.
  CVATTN_ARG(std::int64_t, qkv_channels) = 0;
};

class CVATTN_EXPORT BottleneckAttn final : public UnaryModule {
 public:
  explicit BottleneckAttn(const BottleneckAttnOptions& options);

  // x [N, dim, H, W] with (H, W) == feat_size -> [N, dim_out, H/stride, W/stride].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, heads, H*W, H*W].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const BottleneckAttnOptions& options() const noexcept { return options_; }
  [[nodiscard]] const BottleneckAttnOptions::Dims& dims() const noexcept { return dims_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  BottleneckAttnOptions options_;
  BottleneckAttnOptions::Dims dims_;
  Tensor qkv_weight_, qkv_bias_, height_rel_, width_rel_;
};

}  // namespace cvattn

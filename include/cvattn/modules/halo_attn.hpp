#pragma once
// HaloAttn: timm's HaloNet blocked local self-attention (layers/halo_attn.py). The map is cut
// into block_size x block_size blocks; each block's queries attend the
// (block_size + 2*halo_size)^2 window around it (zero padding outside the map) with
// factorised relative-position logits:
//
//   q = q_conv(x)   1x1, stride block_stride      [N, heads*Dqk, H/bst, W/bst]
//   kv = kv_conv(x) 1x1                           [N, heads*(Dqk + Dv), H, W] (per head: k, v)
//   A = softmax(q.k * s + rel(q)) per block       s = Dqk^-0.5 (scale_pos_embed: (q.k + rel) * s)
//   y = pool(A v)                                 [N, dim_out, H/stride, W/stride]
//
// stride 2 strides the queries (block_stride 2, query blocks of block_size/2) when block_size
// is even and avg_down is false; otherwise the full-resolution result is average-pooled 2x2.
// Map "attention" [N, heads, num_blocks, (block_size/block_stride)^2, win^2].
//
// state_dict keys: q.weight [heads*Dqk, dim, 1, 1], kv.weight [heads*Dqk + dim_out, dim, 1, 1],
// q.bias, kv.bias (qkv_bias), pos_embed.height_rel, pos_embed.width_rel [2*win - 1, Dqk].
#include <cstdint>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT HaloAttnOptions {
 public:
  explicit HaloAttnOptions(std::int64_t dim) : dim_(dim) {}

  // dim from q.weight; dim_head from pos_embed.height_rel; num_heads = q channels / dim_head;
  // dim_out = kv channels - q channels; qkv_bias from q.bias. block_size and halo_size must
  // give the window the relative tables were made for (checked when the weights load).
  // ValueError naming the key when a tensor is missing or malformed.
  [[nodiscard]] static HaloAttnOptions from_state_dict(const StateDict& dict,
                                                       const std::string& prefix = "");

  struct Dims {
    std::int64_t dim_out, dim_head_qk, dim_head_v;
    std::int64_t block_stride, block_size_ds, win_size;
    bool avg_pool;
  };
  // ValueError on invalid options (timm's asserts).
  [[nodiscard]] Dims dims() const;

  CVATTN_ARG(std::int64_t, dim);
  CVATTN_ARG(std::int64_t, dim_out) = 0;  // 0: dim
  CVATTN_ARG(std::int64_t, stride) = 1;   // 1 or 2
  CVATTN_ARG(std::int64_t, num_heads) = 8;
  CVATTN_ARG(std::int64_t, dim_head) = 0;  // 0: make_divisible(dim_out * qk_ratio, 8) / heads
  CVATTN_ARG(std::int64_t, block_size) = 8;
  CVATTN_ARG(std::int64_t, halo_size) = 3;
  CVATTN_ARG(double, qk_ratio) = 1.0;
  CVATTN_ARG(bool, qkv_bias) = false;
  CVATTN_ARG(bool, avg_down) = false;
  CVATTN_ARG(bool, scale_pos_embed) = false;
};

class CVATTN_EXPORT HaloAttn final : public UnaryModule {
 public:
  explicit HaloAttn(const HaloAttnOptions& options);

  // x [N, dim, H, W], H and W multiples of block_size -> [N, dim_out, H/stride, W/stride].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, heads, num_blocks, bq^2, win^2].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const HaloAttnOptions& options() const noexcept { return options_; }
  [[nodiscard]] const HaloAttnOptions::Dims& dims() const noexcept { return dims_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  HaloAttnOptions options_;
  HaloAttnOptions::Dims dims_;
  Tensor q_weight_, q_bias_, kv_weight_, kv_bias_, height_rel_, width_rel_;
};

}  // namespace cvattn

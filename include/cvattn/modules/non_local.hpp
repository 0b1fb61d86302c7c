#pragma once
// NonLocalAttn: timm's non-local block (layers/non_local_attn.py), docs/modules.md §6. Embedded-
// Gaussian self-attention over all H*W positions with a residual connection:
//
//   T, P, G = conv_t(x), conv_p(x), conv_g(x)      1x1 convs with bias, [N, R, H, W]
//   A = softmax_j(scale * T_i . P_j)                [N, H*W, H*W], i = query, j = key
//   O_i = sum_j A_ij G_j                            [N, R, H, W]
//   y = BN(conv_z(O)) + x                           BN in inference mode
//
// scale = C^-0.5 (C = in_channels, not R) with use_scale, else 1. Positions are flattened
// row-major (h*W + w), so row i of the map reshaped to [H, W] is query pixel i's attention.
// Memory is O((H*W)^2) per sample for the map; forward() without maps never holds more than a
// block of score rows per thread.
//
// state_dict keys: t.weight, p.weight, g.weight [R, C, 1, 1], t.bias, p.bias, g.bias [R],
// z.weight [C, R, 1, 1], z.bias [C], norm.{weight, bias, running_mean, running_var} [C],
// norm.num_batches_tracked [].
#include <cstdint>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT NonLocalAttnOptions {
 public:
  explicit NonLocalAttnOptions(std::int64_t in_channels) : in_channels_(in_channels) {}

  // C and R from t.weight [R, C, 1, 1]; use_scale keeps its default (a state_dict cannot
  // tell). ValueError naming the key when a tensor is missing or malformed.
  [[nodiscard]] static NonLocalAttnOptions from_state_dict(const StateDict& dict,
                                                           const std::string& prefix = "");

  // R: rd_channels if non-zero, else make_divisible(C * rd_ratio, rd_divisor) (round_limit 0.9,
  // so C = 72 gives 16). ValueError on invalid options.
  [[nodiscard]] std::int64_t reduced_channels() const;

  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(bool, use_scale) = true;
  CVATTN_ARG(double, rd_ratio) = 1.0 / 8.0;
  CVATTN_ARG(std::int64_t, rd_channels) = 0;  // 0: from rd_ratio (timm's None)
  CVATTN_ARG(std::int64_t, rd_divisor) = 8;
};

class CVATTN_EXPORT NonLocalAttn final : public UnaryModule {
 public:
  // Parameters start as timm initialises the block's norm: zero weight and bias, so a fresh
  // block is the identity (running_var 1). ValueError on invalid options.
  explicit NonLocalAttn(const NonLocalAttnOptions& options);

  // x [N, C, H, W] with H, W >= 1 -> y [N, C, H, W]. ShapeError on any other shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, H*W, H*W].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const NonLocalAttnOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t reduced_channels() const noexcept { return rd_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  NonLocalAttnOptions options_;
  std::int64_t rd_;
  Tensor t_weight_, t_bias_, p_weight_, p_bias_, g_weight_, g_bias_, z_weight_, z_bias_;
  Tensor bn_weight_, bn_bias_, bn_mean_, bn_var_;
};

}  // namespace cvattn

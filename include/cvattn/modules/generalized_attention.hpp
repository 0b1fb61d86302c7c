#pragma once
// GeneralizedAttention: mmcv's spatial attention block (mmcv/cnn/bricks/
// generalized_attention.py; Zhu et al. 2019), computed by functional::generalized_attention:
//
//   E[i, j] = sum of the terms attention_type selects ('1111' = all four):
//             [0] q_i . k_j   [1] q_i . (Px + Py)   [2] appr_bias . k_j   [3] geom_bias . (Px + Py)
//             (with [0]+[2]: (q_i + appr_bias) . k_j; with [1]+[3]: (q_i + geom_bias) . (Px + Py)),
//   Px = fc_x(emb(x_i*q_stride - x_j*kv_stride)) / sqrt(2), Py likewise for rows; emb the
//   sin/cos embedding with wavelength 1000; -inf outside spatial_range
//   A = softmax_j(E) per head                     map "attention" [N, heads, Lq, Lkv]
//   y = gamma * up(proj(A v)) + x                 up: bilinear when q_stride > 1
//
// state_dict keys (mmcv's): query_conv.weight (terms 0/1), key_conv.weight (terms 0/2),
// value_conv.weight, appr_geom_fc_x.weight and appr_geom_fc_y.weight (terms 1/3), appr_bias
// (term 2), geom_bias (term 3), proj_conv.weight, proj_conv.bias, gamma. mmcv also stores
// local_constraint_map (uint8, spatial_range >= 0): cvattn computes it and does not take it;
// drop the key before loading.
#include <cstdint>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/generalized_attention.hpp"

namespace cvattn {

class CVATTN_EXPORT GeneralizedAttentionOptions {
 public:
  explicit GeneralizedAttentionOptions(std::int64_t in_channels) : in_channels_(in_channels) {}

  // in_channels from value_conv.weight and position_embedding_dim from appr_geom_fc_x.weight
  // (when present). num_heads and attention_type cannot be told from the weights (e.g. '1011'
  // and '1111' have the same keys) and keep their defaults; loading checks the keys against
  // them. ValueError naming the key when a tensor is missing or malformed.
  [[nodiscard]] static GeneralizedAttentionOptions from_state_dict(const StateDict& dict,
                                                                   const std::string& prefix = "");

  // The kernel's options; ValueError on invalid settings.
  [[nodiscard]] functional::GeneralizedAttentionOptions functional_options() const;
  // position_embedding_dim, -1 resolved to in_channels.
  [[nodiscard]] std::int64_t resolved_position_embedding_dim() const;

  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, spatial_range) = -1;
  CVATTN_ARG(std::int64_t, num_heads) = 9;
  CVATTN_ARG(std::int64_t, position_embedding_dim) = -1;  // <= 0: in_channels
  CVATTN_ARG(std::int64_t, position_magnitude) = 1;
  CVATTN_ARG(std::int64_t, kv_stride) = 2;
  CVATTN_ARG(std::int64_t, q_stride) = 1;
  CVATTN_ARG(std::string, attention_type) = "1111";
};

class CVATTN_EXPORT GeneralizedAttention final : public UnaryModule {
 public:
  // Parameters start at zero (gamma = 0 makes a fresh block the identity, as in mmcv).
  explicit GeneralizedAttention(const GeneralizedAttentionOptions& options);

  // x [N, in_channels, H, W] -> [N, in_channels, H, W].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, heads, Hq*Wq, Hkv*Wkv] ([N, heads, 1, Hkv*Wkv]
  // for '0010').
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const GeneralizedAttentionOptions& options() const noexcept { return options_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  GeneralizedAttentionOptions options_;
  functional::GeneralizedAttentionOptions kernel_;
  functional::GeneralizedAttentionWeights w_;
};

}  // namespace cvattn

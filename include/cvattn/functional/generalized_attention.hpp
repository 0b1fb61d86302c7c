#pragma once
// mmcv's GeneralizedAttention (Zhu et al. 2019, "An Empirical Study of Spatial Attention
// Mechanisms in Deep Networks"; mmcv/cnn/bricks/generalized_attention.py) as one stateless
// call. docs/spatial_attention.md gives the equations and the choice made for mmcv's '0100'
// branch on non-square maps.
#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/attention.hpp"

namespace cvattn::functional {

// The four terms, in mmcv's order: [0] query content - key content, [1] query content -
// relative position, [2] key content only (appr_bias . k), [3] relative position only
// (geom_bias . position).
using AttentionTerms = std::array<bool, 4>;
// "1111", "0010", ...: exactly four characters '0' or '1'; ValueError otherwise.
[[nodiscard]] CVATTN_EXPORT AttentionTerms parse_attention_type(std::string_view word);

// mmcv's get_position_embedding: for query coordinates i*q_stride (i < q_len) and key
// coordinates j*kv_stride (j < kv_len), d = (i*q_stride - j*kv_stride) * magnitude and
//   emb[i, j] = [sin(d / 1000^(4k/feat_dim)) for k < feat_dim/4, then the cosines]
// (float32 arithmetic as torch's). feat_dim must be a positive multiple of 4. [q_len, kv_len,
// feat_dim/2].
[[nodiscard]] CVATTN_EXPORT Tensor generalized_position_embedding(
    std::int64_t q_len, std::int64_t kv_len, std::int64_t q_stride, std::int64_t kv_stride,
    std::int64_t magnitude, std::int64_t feat_dim);

struct GeneralizedAttentionOptions {
  CVATTN_ARG(std::int64_t, num_heads) = 9;
  CVATTN_ARG(AttentionTerms, attention_type) = AttentionTerms{true, true, true, true};
  CVATTN_ARG(std::int64_t, kv_stride) = 2;
  CVATTN_ARG(std::int64_t, q_stride) = 1;
  CVATTN_ARG(std::int64_t, position_magnitude) = 1;
  // < 0: no constraint; else query (iy, ix) attends the key rows
  // [max((iy - r) // kv_stride, 0), (iy + r + 1) // kv_stride + 1) and likewise the columns.
  CVATTN_ARG(std::int64_t, spatial_range) = -1;
  // mmcv's local_constraint_map is built for max_len x max_len query maps (84 for 256 input
  // channels, 42 for 512, nothing else); 0 here means no limit.
  CVATTN_ARG(std::int64_t, max_len) = 0;
  CVATTN_ARG(bool, need_weights) = true;
};

// The module's parameters, mmcv's names; tensors the selected terms do not use are ignored
// (and may be undefined). E = C / num_heads (qk_embed_dim = v_dim), P = position_embedding_dim.
struct GeneralizedAttentionWeights {
  Tensor query_weight;  // query_conv.weight [heads*E, C, 1, 1]   (terms 0, 1)
  Tensor key_weight;    // key_conv.weight [heads*E, C, 1, 1]     (terms 0, 2)
  Tensor value_weight;  // value_conv.weight [heads*E, C, 1, 1]
  Tensor fc_x, fc_y;    // appr_geom_fc_{x,y}.weight [heads*E, P/2] (terms 1, 3)
  Tensor appr_bias;     // [heads*E] (term 2)
  Tensor geom_bias;     // [heads*E] (term 3)
  Tensor proj_weight;   // proj_conv.weight [C, heads*E, 1, 1]
  Tensor proj_bias;     // proj_conv.bias [C]
  Tensor gamma;         // [1]
};

// x [N, C, H, W]. Queries are x[::q_stride, ::q_stride] (hq x wq), keys and values
// x[::kv_stride, ::kv_stride] (hk x wk). Returns output [N, C, H, W] = gamma * out + x
// (out bilinearly upsampled from hq x wq when q_stride > 1) and attn_weights
// [N, heads, hq*wq, hk*wk] ([N, heads, 1, hk*wk] for '0010' alone, where every query shares
// one distribution, as in mmcv).
// mmcv's '0100' branch (term 1 without term 3) pairs the query at (x, y) with the vertical
// embeddings of row y (its query is re-laid out as [w, h]); cvattn reproduces that on square
// maps and throws ShapeError on non-square ones, where mmcv cannot run (mmdetection#8179).
[[nodiscard]] CVATTN_EXPORT AttentionResult
generalized_attention(const Tensor& x, const GeneralizedAttentionWeights& weights,
                      const GeneralizedAttentionOptions& options = {});

}  // namespace cvattn::functional

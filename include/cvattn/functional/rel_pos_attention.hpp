#pragma once
// Self-attention with relative-position logits over a feature map (BoTNet, HaloNet) and
// lambda layers (LambdaNetworks), with the conventions of timm's bottleneck_attn.py,
// halo_attn.py and lambda_layer.py. docs/spatial_attention.md gives the equations.
#include <cstdint>
#include <optional>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/attention.hpp"

namespace cvattn::functional {

// Factorised relative-position logits (Attention Augmented Convolution, Bello et al. 2019) of
// queries laid out on a qh x qw grid against keys on a kh x kw grid (qh <= kh, qw <= kw):
//   out[b, h, (y, x), (u, v)] = multiplier * ( q[b, (y, x), h] . height_rel[kh - 1 + u - y]
//                                            + q[b, (y, x), h] . width_rel[kw - 1 + v - x] )
// q [B, qh*qw, H*D] (head h in columns [h*D, (h+1)*D)), height_rel [2*kh - 1, D],
// width_rel [2*kw - 1, D]. Returns [B, H, qh*qw, kh*kw] (flattened positions row-major).
// ShapeError naming the tensor when a shape does not fit.
[[nodiscard]] CVATTN_EXPORT Tensor rel_pos_logits(const Tensor& q, const Tensor& height_rel,
                                                  const Tensor& width_rel, std::int64_t num_heads,
                                                  Pair2 query_size, Pair2 key_size,
                                                  double multiplier = 1.0);

struct RelPosAttentionOptions {
  CVATTN_ARG(std::int64_t, num_heads) = 1;
  // Score multiplier; default 1/sqrt(D) (D the query/key head width).
  CVATTN_ARG(std::optional<double>, scale);
  // false: softmax(q.k * scale + rel); true: softmax((q.k + rel) * scale) (timm's
  // scale_pos_embed).
  CVATTN_ARG(bool, scale_pos_embed) = false;
  CVATTN_ARG(bool, need_weights) = true;
};

// BoTNet's global self-attention with relative logits (timm BottleneckAttn), all H*W positions:
//   q, k [N, H*W, heads*D], v [N, H*W, heads*Dv] (head-major column blocks), height_rel
//   [2H - 1, D], width_rel [2W - 1, D]. Returns output [N, H*W, heads*Dv] and attn_weights
//   [N, heads, H*W, H*W].
[[nodiscard]] CVATTN_EXPORT AttentionResult rel_pos_self_attention(
    const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& height_rel,
    const Tensor& width_rel, Pair2 feat_size, const RelPosAttentionOptions& options = {});

struct HaloAttentionOptions {
  CVATTN_ARG(std::int64_t, num_heads) = 8;
  CVATTN_ARG(std::int64_t, block_size) = 8;  // key blocks, in kv pixels
  CVATTN_ARG(std::int64_t, halo_size) = 3;
  CVATTN_ARG(std::optional<double>, scale);  // default 1/sqrt(D)
  CVATTN_ARG(bool, scale_pos_embed) = false;
  CVATTN_ARG(bool, need_weights) = true;
};

// HaloNet's blocked local attention (timm HaloAttn). kv [N, heads*(D + Dv), H, W] holds per head
// h the D key channels then the Dv value channels (channels [h*(D+Dv), (h+1)*(D+Dv))), H and W
// multiples of block_size; nb = (H/bs)*(W/bs) blocks. Each block's bq x bq queries, q
// [N, heads*D, (H/bs)*bq, (W/bs)*bq] (bq = bs, or bs/stride for strided queries), attend the
// (bs + 2*halo)^2 window around the block, zero-padded outside the map (padded keys take part
// with score 0 + their relative logit, as in timm). height_rel, width_rel [2*win - 1, D].
// Returns output [N, heads*Dv, (H/bs)*bq, (W/bs)*bq] and attn_weights [N, heads, nb, bq^2,
// win^2] (blocks row-major, window positions row-major).
[[nodiscard]] CVATTN_EXPORT AttentionResult halo_attention(const Tensor& q, const Tensor& kv,
                                                           const Tensor& height_rel,
                                                           const Tensor& width_rel,
                                                           const HaloAttentionOptions& options);

// Lambda layer (timm LambdaLayer, intra-depth u = 1), M = H*W:
//   lam_c[b]   = softmax_M(k[b]) @ v[b]^T                  content lambda [K, V]
//   out[b, h*V + c, m] = sum_k q[b, h*K + k, m] * (lam_c[b, k, c] + lam_p[b, m, k, c])
// q [N, heads*K, H, W] and v [N, V, H, W] already normalised, k [N, K, H, W] raw.
// lambda_conv_attention: lam_p[b, m, k, c] = conv2d(v[b, c], weight[k] (r x r), bias[k],
//   padding r/2) at m; weight [K, 1, r, r, 1] (timm's Conv3d) or [K, 1, r, r], r odd, bias [K]
//   or undefined.
// lambda_rel_pos_attention: lam_p[b, m, k, c] = sum_n pos_emb[y_n - y_m + H - 1,
//   x_n - x_m + W - 1, k] * v[b, c, n]; pos_emb [2H - 1, 2W - 1, K].
// Both return [N, heads*V, H, W].
[[nodiscard]] CVATTN_EXPORT Tensor lambda_conv_attention(const Tensor& q, const Tensor& k,
                                                         const Tensor& v, const Tensor& weight,
                                                         const Tensor& bias = {});
[[nodiscard]] CVATTN_EXPORT Tensor lambda_rel_pos_attention(const Tensor& q, const Tensor& k,
                                                            const Tensor& v, const Tensor& pos_emb);

}  // namespace cvattn::functional

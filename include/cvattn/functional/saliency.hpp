#pragma once
// Seeing a whole network (docs/modules.md §18): class activation maps for global-pool + linear
// heads and attention rollout for ViT-family networks.
#include <cstdint>
#include <string>
#include <vector>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// Class activation map (Zhou et al., CVPR 2016). feature_map F [N, C, h, w] is the last map
// before the global average pooling, weight W [K, C] the linear classifier, logits [N, K].
// For each sample, c = class_index when >= 0, else argmax of logits[n] (first maximum), and
//   cam[n] = relu(sum_k W[c, k] * F[n, k]) / max(that)     (an all-zero map stays zero)
// -> [N, h, w]. ShapeError on inconsistent shapes, ValueError when class_index >= K.
[[nodiscard]] CVATTN_EXPORT Tensor class_activation_map(const Tensor& feature_map,
                                                        const Tensor& weight, const Tensor& logits,
                                                        std::int64_t class_index = -1);

// How attention_rollout fuses the heads of one block: their mean, maximum or minimum.
enum class HeadFusion { mean, max, min };
// "mean" / "max" / "min"; ValueError on any other word.
[[nodiscard]] CVATTN_EXPORT HeadFusion parse_head_fusion(const std::string& word);
[[nodiscard]] CVATTN_EXPORT const char* to_string(HeadFusion fusion);

struct AttentionRolloutOptions {
  explicit AttentionRolloutOptions(Pair2 grid) : grid_(grid) {}
  CVATTN_ARG(Pair2, grid);  // the patch grid [gh, gw]: T = prefix_tokens + gh * gw
  CVATTN_ARG(std::int64_t, prefix_tokens) = 1;  // class token (+ distillation token)
  CVATTN_ARG(HeadFusion, head_fusion) = HeadFusion::mean;
  CVATTN_ARG(double, discard_ratio) = 0.0;  // in [0, 1)
};

// Attention rollout (Abnar & Zuidema 2020; docs/modules.md §18) of the softmax attention of every
// block, first block first, each [N, heads, T, T]:
//   A_l = fuse_heads(attention_l)                               [N, T, T]
//   discard: the floor(r * T * T) smallest entries of A_l (per sample; ties: lower flat index
//            first) are chosen and all of them except the [0, 0] entry set to 0
//   Â_l = 0.5 * A_l + 0.5 * I, each row divided by its sum;     R = Â_L ... Â_1
// (only row 0 of R is formed, as e_0^T Â_L ... Â_1: T^2 work per block)
//   rollout[n] = R[n, 0, P:] as [gh, gw], divided by its maximum
// Computed in double. ShapeError on inconsistent shapes, ValueError on bad options.
[[nodiscard]] CVATTN_EXPORT Tensor attention_rollout(const std::vector<Tensor>& attentions,
                                                     const AttentionRolloutOptions& options);

}  // namespace cvattn::functional

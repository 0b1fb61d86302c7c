#pragma once
// Seeing a whole network (MODULES.md §18): class activation maps for global-pool + linear
// heads. (Attention rollout for ViT-family networks joins it with the ViT models.)
#include <cstdint>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// Class activation map (Zhou et al., CVPR 2016). feature_map F [N, C, h, w] is the last map
// before the global average pooling, weight W [K, C] the linear classifier, logits [N, K].
// For each sample, c = class_index when >= 0, else argmax of logits[n] (first maximum), and
//   cam[n] = relu(sum_k W[c, k] * F[n, k]) / max(that)     (an all-zero map stays zero)
// -> [N, h, w]. ShapeError on inconsistent shapes, ValueError when class_index >= K.
[[nodiscard]] CVATTN_EXPORT Tensor class_activation_map(const Tensor& feature_map,
                                                        const Tensor& weight,
                                                        const Tensor& logits,
                                                        std::int64_t class_index = -1);

}  // namespace cvattn::functional

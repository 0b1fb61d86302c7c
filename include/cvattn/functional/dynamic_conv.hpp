#pragma once
// Convolution with per-sample kernels mixed from K experts: dynamic convolution (Chen et al.,
// CVPR 2020; docs/modules.md §17) and timm's CondConv2d, plus the two routings that mix them
// (docs/gates.md).
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/conv.hpp"

namespace cvattn::functional {

// routing [N, K], experts [K, ...] -> [N, ...]: out[n] = sum_k routing[n, k] * experts[k]
// (torch.matmul(routing, experts.view(K, -1)), viewed back).
[[nodiscard]] CVATTN_EXPORT Tensor aggregate_experts(const Tensor& routing, const Tensor& experts);

// y[n] = conv2d(x[n], W[n], b[n], options) with W[n] = sum_k routing[n, k] * weight[k] and
// b[n] = sum_k routing[n, k] * bias[k]: x [N, Ci, H, W], weight [K, Co, Ci/groups, kh, kw],
// bias [K, Co] or undefined, routing [N, K] -> [N, Co, Ho, Wo].
[[nodiscard]] CVATTN_EXPORT Tensor dynamic_conv2d(const Tensor& x, const Tensor& weight,
                                                  const Tensor& bias, const Tensor& routing,
                                                  const Conv2dOptions& options = {});

// Dynamic convolution's kernel attention: pi = softmax(fc2(ReLU(fc1(mean_hw x))) / temperature)
// over the K kernels; x [N, Ci, H, W] (H, W >= 1), fc1_weight [hidden, Ci, 1, 1] (no bias),
// fc2_weight [K, hidden, 1, 1], fc2_bias [K] -> pi [N, K]. temperature must be positive.
[[nodiscard]] CVATTN_EXPORT Tensor dynamic_conv_attention(const Tensor& x, const Tensor& fc1_weight,
                                                          const Tensor& fc2_weight,
                                                          const Tensor& fc2_bias,
                                                          double temperature = 1.0);

// timm's CondConvResidual routing: sigmoid(linear(mean_hw x, weight, bias)); x [N, C, H, W],
// weight [K, C], bias [K] -> routing weights [N, K].
[[nodiscard]] CVATTN_EXPORT Tensor cond_conv_routing(const Tensor& x, const Tensor& weight,
                                                     const Tensor& bias);

}  // namespace cvattn::functional

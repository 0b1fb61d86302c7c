#pragma once
// Inference-mode batch normalisation and its folding into a preceding conv or linear layer.
#include <utility>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// x [N, C, ...] (rank >= 2, channels in dim 1), running statistics [C], weight and bias [C] or
// undefined (affine=False: 1 and 0). Evaluated as PyTorch's CPU kernel does:
//   a = (1 / sqrt(var + eps)) * weight;  b = bias - mean * a;  y = x * a + b.
[[nodiscard]] CVATTN_EXPORT Tensor batch_norm(const Tensor& x, const Tensor& running_mean,
                                              const Tensor& running_var, const Tensor& weight,
                                              const Tensor& bias, double eps = 1e-5);

// batch_norm(x, ...) + residual in one pass (residual has x's shape), each element rounded as
// the two PyTorch ops would: y = (x * a + b) + residual. NonLocal's output.
[[nodiscard]] CVATTN_EXPORT Tensor batch_norm_add(const Tensor& x, const Tensor& residual,
                                                  const Tensor& running_mean,
                                                  const Tensor& running_var, const Tensor& weight,
                                                  const Tensor& bias, double eps = 1e-5);

// Folds BatchNorm(conv(x)) into one conv: for output channel o with a = the BN scale above,
// weight'[o] = weight[o] * a[o] and bias'[o] = (conv_bias[o] - mean[o]) * a[o] + bn_bias[o].
// conv_weight is [C, ...] (a conv's [C, Cin/g, kh, kw] or a linear's [C, in]); conv_bias,
// bn_weight and bn_bias may be undefined. Returns (weight', bias'); bias' is always defined.
[[nodiscard]] CVATTN_EXPORT std::pair<Tensor, Tensor> fold_batch_norm(
    const Tensor& conv_weight, const Tensor& conv_bias, const Tensor& running_mean,
    const Tensor& running_var, const Tensor& bn_weight, const Tensor& bn_bias, double eps = 1e-5);

}  // namespace cvattn::functional

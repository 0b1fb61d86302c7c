#pragma once
// Layer and group normalisation with PyTorch's semantics (F.layer_norm, F.group_norm) and
// timm's channels-first LayerNorm2d. Statistics are the biased (population) mean and variance
// of each normalised group, y = (x - mean) / sqrt(var + eps) * weight + bias.
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// F.layer_norm: normalises over the trailing dims `normalized_shape` of x (x's last
// normalized_shape.size() dims must equal it). weight and bias are undefined (1 and 0) or of
// shape normalized_shape. A group holding NaN or inf gives NaN, as in PyTorch.
[[nodiscard]] CVATTN_EXPORT Tensor layer_norm(const Tensor& x, const Shape& normalized_shape,
                                              const Tensor& weight = {}, const Tensor& bias = {},
                                              double eps = 1e-5);

// timm's LayerNorm2d: x [N, C, H, W] normalised over C at every (n, h, w) (channels-first
// layer norm, without the permutes); weight and bias [C] or undefined. timm's default eps is
// 1e-6; PyTorch's (and this default) 1e-5.
[[nodiscard]] CVATTN_EXPORT Tensor layer_norm2d(const Tensor& x, const Tensor& weight = {},
                                                const Tensor& bias = {}, double eps = 1e-5);

// F.group_norm: x [N, C, ...] (rank >= 2), C divided into num_groups groups of C / num_groups
// consecutive channels, each group of each sample normalised over its channels and all
// trailing positions; weight and bias [C] or undefined.
[[nodiscard]] CVATTN_EXPORT Tensor group_norm(const Tensor& x, std::int64_t num_groups,
                                              const Tensor& weight = {}, const Tensor& bias = {},
                                              double eps = 1e-5);

}  // namespace cvattn::functional

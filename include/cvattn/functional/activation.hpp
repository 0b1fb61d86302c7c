#pragma once
// Elementwise activations and (log-)softmax with PyTorch's semantics, on tensors of any rank.
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// max(x, 0); NaN stays NaN, as in PyTorch.
[[nodiscard]] CVATTN_EXPORT Tensor relu(const Tensor& x);
// 1 / (1 + exp(-x)).
[[nodiscard]] CVATTN_EXPORT Tensor sigmoid(const Tensor& x);
[[nodiscard]] CVATTN_EXPORT Tensor tanh(const Tensor& x);

// exp(x - m) / sum(exp(x - m)) along `dim` (negative counts from the end), m the maximum along
// dim, so large inputs do not overflow. A slice that is entirely -inf gives NaN, as in PyTorch.
[[nodiscard]] CVATTN_EXPORT Tensor softmax(const Tensor& x, int dim);
// x - m - log(sum(exp(x - m))) along `dim`.
[[nodiscard]] CVATTN_EXPORT Tensor log_softmax(const Tensor& x, int dim);

}  // namespace cvattn::functional

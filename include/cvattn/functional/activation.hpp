#pragma once
// Elementwise activations and (log-)softmax with PyTorch's semantics, on tensors of any rank.
#include <string>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

// The activations timm builds by name (timm.layers.get_act_layer), for modules whose act_layer
// is a setting. silu is also spelled swish; hard_swish / hard_sigmoid also hardswish /
// hardsigmoid (timm accepts both).
enum class ActLayer {
  identity,
  relu,
  relu6,
  sigmoid,
  tanh,
  silu,
  gelu,
  gelu_tanh,
  hard_swish,
  hard_sigmoid,
  mish
};
// timm's word -> ActLayer; ValueError on any other word, listing the accepted ones.
[[nodiscard]] CVATTN_EXPORT ActLayer parse_act_layer(const std::string& word);
// The canonical timm word ("silu", "hard_swish", ...).
[[nodiscard]] CVATTN_EXPORT const char* to_string(ActLayer act);

// F.gelu's `approximate` argument ("none" / "tanh"; ValueError on any other word).
enum class GeluApproximate { none, tanh };
[[nodiscard]] CVATTN_EXPORT GeluApproximate parse_gelu_approximate(const std::string& word);
[[nodiscard]] CVATTN_EXPORT const char* to_string(GeluApproximate approximate);

}  // namespace cvattn

namespace cvattn::functional {

// max(x, 0); NaN stays NaN, as in PyTorch.
[[nodiscard]] CVATTN_EXPORT Tensor relu(const Tensor& x);
// 1 / (1 + exp(-x)).
[[nodiscard]] CVATTN_EXPORT Tensor sigmoid(const Tensor& x);
[[nodiscard]] CVATTN_EXPORT Tensor tanh(const Tensor& x);
// min(max(x, 0), 6), NaN kept (F.relu6).
[[nodiscard]] CVATTN_EXPORT Tensor relu6(const Tensor& x);

// F.gelu: none is x * (1 + erf(x / sqrt(2))) / 2; tanh is
// x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) / 2. gelu(-inf) is NaN, as in PyTorch.
[[nodiscard]] CVATTN_EXPORT Tensor gelu(const Tensor& x,
                                        GeluApproximate approximate = GeluApproximate::none);
// x * sigmoid(x) (F.silu); silu(-inf) is NaN, as in PyTorch.
[[nodiscard]] CVATTN_EXPORT Tensor silu(const Tensor& x);
// x * min(max(x + 3, 0), 6) / 6 (F.hardswish); NaN stays NaN, hardswish(-inf) is NaN.
[[nodiscard]] CVATTN_EXPORT Tensor hardswish(const Tensor& x);
// min(max(x + 3, 0), 6) / 6 (F.hardsigmoid); NaN stays NaN.
[[nodiscard]] CVATTN_EXPORT Tensor hardsigmoid(const Tensor& x);
// x * tanh(softplus(x)), softplus(x) = log1p(exp(x)) (F.mish); mish(-inf) is NaN.
[[nodiscard]] CVATTN_EXPORT Tensor mish(const Tensor& x);

// The activation `act` applied elementwise (identity returns x itself, sharing storage).
[[nodiscard]] CVATTN_EXPORT Tensor activation(const Tensor& x, ActLayer act);
// The same in place, as timm's `inplace=True` activations: x's storage is overwritten (so is
// every tensor that shares it). Networks apply it to the conv or linear output they own, which
// saves a feature map's allocation and a write pass.
CVATTN_EXPORT void activation_(Tensor& x, ActLayer act);

// exp(x - m) / sum(exp(x - m)) along `dim` (negative counts from the end), m the maximum along
// dim, so large inputs do not overflow. A slice that is entirely -inf gives NaN, as in PyTorch.
[[nodiscard]] CVATTN_EXPORT Tensor softmax(const Tensor& x, int dim);
// x - m - log(sum(exp(x - m))) along `dim`.
[[nodiscard]] CVATTN_EXPORT Tensor log_softmax(const Tensor& x, int dim);

}  // namespace cvattn::functional

#pragma once
// linear: torch.nn.functional.linear, y = x @ weight^T + bias.
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// x [..., in] (rank >= 1), weight [out, in], bias [out] or undefined -> [..., out].
[[nodiscard]] CVATTN_EXPORT Tensor linear(const Tensor& x, const Tensor& weight,
                                          const Tensor& bias = {});

}  // namespace cvattn::functional

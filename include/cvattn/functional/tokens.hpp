#pragma once
// Token-sequence helpers of vision transformers: prefix tokens (class, distillation), picking
// one token, and the mean of two heads' outputs (DeiT's distilled head).
#include <cstdint>
#include <vector>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// tokens [N, L, D] with each prefix [1, k, D] (broadcast over N) placed before them, in order,
// as torch.cat((cls.expand(N, -1, -1), ..., tokens), dim=1) -> [N, sum(k) + L, D].
[[nodiscard]] CVATTN_EXPORT Tensor prepend_tokens(const std::vector<Tensor>& prefix,
                                                  const Tensor& tokens);

// tokens[:, index] -> [N, D]. ShapeError when index is out of range.
[[nodiscard]] CVATTN_EXPORT Tensor select_token(const Tensor& tokens, std::int64_t index);

// (a + b) / 2 elementwise (timm's `(x + x_dist) / 2`); a and b of one shape.
[[nodiscard]] CVATTN_EXPORT Tensor mean_of_two(const Tensor& a, const Tensor& b);

}  // namespace cvattn::functional

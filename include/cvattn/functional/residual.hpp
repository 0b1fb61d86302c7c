#pragma once
// residual_add: the join of a residual block, y = x + shortcut (then ReLU), as timm's
// `x += shortcut; x = act(x)`.
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// x and shortcut of one shape (any rank) -> x + shortcut, then max(., 0) when relu is true
// (NaN kept, as torch.relu). ShapeError when the shapes differ.
[[nodiscard]] CVATTN_EXPORT Tensor residual_add(const Tensor& x, const Tensor& shortcut,
                                                bool relu = true);

}  // namespace cvattn::functional

#pragma once
// The bilinear attention transform of BAT ("Non-Local Neural Networks With Grouped Bilinear
// Attentional Transforms", Chi et al. 2020; timm BilinearAttnTransform).
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// x [N, C, H, W] with H = b*th and W = b*tw; p, q [N, G, b, b] (G divides C; channel c uses
// group c / (C/G)). With P = kron(p, I_th) [H, H] and Q = kron(q, I_tw) [W, W] (timm's
// resize_mat), y[n, c] = P x[n, c] Q, i.e.
//   y[n, c, i*th + a, j*tw + e] = sum_{i', j'} p[i, i'] x[n, c, i'*th + a, j'*tw + e] q[j', j].
// ShapeError when shapes do not fit.
[[nodiscard]] CVATTN_EXPORT Tensor bilinear_attn_transform(const Tensor& x, const Tensor& p,
                                                           const Tensor& q);

}  // namespace cvattn::functional

#pragma once
// Position encodings for 2-D feature maps: DETR's fixed sine encoding (docs/modules.md §13), a
// learned absolute table, and Swin's relative position bias.
#include <cstdint>
#include <optional>
#include <vector>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

struct PositionEncodingOptions {
  CVATTN_ARG(double, temperature) = 10000.0;
  // Normalise the running counts to (0, scale] by the count of valid pixels in the row/column.
  CVATTN_ARG(bool, normalize) = true;
  // Default 2*pi. Giving a scale with normalize=false is a ValueError, as in DETR.
  CVATTN_ARG(std::optional<double>, scale);
};

// DETR PositionEmbeddingSine with num_pos_feats = C/2 for size = {N, C, H, W} (C a positive
// multiple of 4). Returns [N, C, H, W]: channels [0, C/2) encode y (rows), [C/2, C) encode x.
// mask (optional) is [N, H, W] with 1 = padded pixel, 0 = valid (only 0 and 1 are accepted);
// without it every pixel is valid.
[[nodiscard]] CVATTN_EXPORT Tensor position_encoding_sine(
    const Shape& size, const PositionEncodingOptions& options = {}, const Tensor& mask = {});

// x [N, C, H, W] + a learned absolute table [1, C, H, W] or [C, H, W] (broadcast over N), as
// ViT/DETR-style learned embeddings are added. ShapeError when the table does not match x.
[[nodiscard]] CVATTN_EXPORT Tensor add_position_encoding(const Tensor& x, const Tensor& table);

// Swin Transformer relative position index of a window (Wh x Ww tokens, row-major):
// index[i][j] = (hi - hj + Wh - 1) * (2*Ww - 1) + (wi - wj + Ww - 1), shape [Wh*Ww, Wh*Ww].
[[nodiscard]] CVATTN_EXPORT std::vector<std::int64_t> relative_position_index(Pair2 window);

// Swin's bias: table [(2*Wh-1)*(2*Ww-1), heads] gathered by relative_position_index, returned
// as [heads, Wh*Ww, Wh*Ww] (ready to add to per-head attention scores).
[[nodiscard]] CVATTN_EXPORT Tensor relative_position_bias(const Tensor& table, Pair2 window);

}  // namespace cvattn::functional

#pragma once
// Swin Transformer's shifted-window attention (timm models/swin_transformer.py), on
// channels-last tokens x [N, H, W, C] (timm's NHWC layout):
//
//   window_partition   torch.roll(x, (-sh, -sw), (1, 2)), zero padding at the bottom / right up
//                      to whole windows, then timm's window_partition: windows row-major per
//                      sample, samples one after another -> [N * nW, wh * ww, C]
//   window_reverse     the inverse: timm's window_reverse, the padding cropped, rolled back
//   shifted_window_mask  timm's SwinTransformerBlock.get_attn_mask: [nW, A, A] holding 0 where
//                      two tokens of a window come from the same region of the shifted image
//                      and -100 elsewhere (A = wh * ww)
//   window_attention   multi-head attention inside each window from the packed qkv projection,
//                      with an additive bias per (window, head): the relative position bias
//                      (functional/position_encoding.hpp), plus the shift mask
//   merge_patches      PatchMerging's gather: 2x2 neighbours concatenated along C
#include <cstdint>
#include <optional>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/attention.hpp"

namespace cvattn::functional {

// timm's mask value for token pairs from different regions of a shifted window.
inline constexpr float kShiftedWindowMaskValue = -100.0f;

// Windows per sample of an H x W map: ceil(H / wh) * ceil(W / ww).
[[nodiscard]] CVATTN_EXPORT std::int64_t window_count(Pair2 size, Pair2 window);

// x [N, H, W, C] -> [N * nW, wh * ww, C]; window (wi, wj) of sample n is row
// n * nW + wi * ceil(W / ww) + wj, its token (i, j) at i * ww + j holds the rolled input at
// (wi * wh + i, wj * ww + j), or 0 in the padding. ValueError unless window >= 1 and
// 0 <= shift < window.
[[nodiscard]] CVATTN_EXPORT Tensor window_partition(const Tensor& x, Pair2 window,
                                                    Pair2 shift = Pair2(0));

// windows [N * nW, wh * ww, C] (as window_partition makes them for an H x W map) -> x
// [N, H, W, C].
[[nodiscard]] CVATTN_EXPORT Tensor window_reverse(const Tensor& windows, Pair2 size, Pair2 window,
                                                  Pair2 shift = Pair2(0));

// [nW, A, A] for an H x W map (padded to whole windows) cut into windows after a cyclic shift:
// element (w, a, b) is 0 when tokens a and b of window w lie in the same one of timm's 3 x 3
// regions (slices [0, -window), [-window, -shift), [-shift, end) per axis, Python's slicing),
// else kShiftedWindowMaskValue.
[[nodiscard]] CVATTN_EXPORT Tensor shifted_window_mask(Pair2 size, Pair2 window, Pair2 shift);

struct WindowAttentionOptions {
  // Default head_dim^-0.5 (timm's WindowAttention.scale).
  CVATTN_ARG(std::optional<double>, scale);
  CVATTN_ARG(bool, need_weights) = true;
};

// qkv [B, A, 3 * heads * E]: timm's qkv Linear output for B windows of A tokens, columns
// [q | k | v], each heads-major. bias (optional, additive, already summed with any mask): [heads,
// A, A] shared by every window, or [nW, heads, A, A] with window b using bias[b % nW] (B a
// multiple of nW, windows sample-major as window_partition orders them).
//   P = softmax(q k^T * scale + bias) per (window, head); output [B, A, heads * E] = P v with head
//   h in columns [h*E, (h+1)*E) (the input of timm's proj); attn_weights [B, heads, A, A].
[[nodiscard]] CVATTN_EXPORT AttentionResult
window_attention(const Tensor& qkv, std::int64_t num_heads, const Tensor& bias = {},
                 const WindowAttentionOptions& options = {});

// timm's PatchMerging gather: x [N, H, W, C] zero padded to even H, W -> [N, H', W', 4C]
// (H' = ceil(H / 2)), channel block k = 2 * dw + dh holding x[n, 2i + dh, 2j + dw] (timm's
// reshape(B, H/2, 2, W/2, 2, C).permute(0, 1, 3, 4, 2, 5).flatten(3)).
[[nodiscard]] CVATTN_EXPORT Tensor merge_patches(const Tensor& x);

}  // namespace cvattn::functional

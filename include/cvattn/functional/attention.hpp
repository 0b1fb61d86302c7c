#pragma once
// Scaled dot-product attention (PyTorch `torch.nn.functional.scaled_dot_product_attention`,
// docs/modules.md §11) and the spatial <-> token helpers used around it.
//
//   P   = softmax(Q K^T * scale + mask)      over the key axis
//   out = P V
//
// A query row whose keys are all masked (-inf) gets zero weights and a zero output, as PyTorch
// >= 2.5 does (earlier versions gave NaN).
#include <cstdint>
#include <optional>
#include <string_view>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// How `attn_mask` is read.
//   additive: float values added to the scaled scores (0 keeps a key, -inf removes it), the
//             convention of a float mask in SDPA.
//   boolean:  every value must be exactly 0 or 1; 1 = the key may be attended (True = allowed,
//             SDPA's bool convention, the opposite of nn.MultiheadAttention's), 0 = removed.
enum class MaskType { additive, boolean };
// "additive" / "float" -> additive, "boolean" / "bool" -> boolean; ValueError otherwise.
[[nodiscard]] CVATTN_EXPORT MaskType parse_mask_type(std::string_view word);

struct SdpaOptions {
  // Causal mask: query i may attend key j iff j <= i (lower triangle of the L x S score matrix,
  // anchored at the top-left corner also when L != S). Cannot be combined with attn_mask.
  CVATTN_ARG(bool, is_causal) = false;
  // Score multiplier; default 1/sqrt(E), computed in double and rounded to float once.
  CVATTN_ARG(std::optional<double>, scale);
  CVATTN_ARG(MaskType, mask_type) = MaskType::additive;
  // false: attn_weights stays undefined and the kernel never holds more than one block of
  // query rows' scores per thread (fused, flash-style); the output is the same.
  CVATTN_ARG(bool, need_weights) = true;
};

struct AttentionResult {
  Tensor output;        // [B..., L, Ev]
  Tensor attn_weights;  // [B..., L, S]; undefined when need_weights is false
};

// query [B..., L, E], key [B..., S, E], value [B..., S, Ev]; output [B..., L, Ev].
// The leading (batch) dims of query, key and value broadcast NumPy-style (aligned from the
// right, each equal or 1; a tensor may have fewer of them, e.g. 2-D unbatched inputs), so
// [B, H, L, E] queries may share [B, 1, S, E] keys. attn_mask (optional) must broadcast to
// [B..., L, S]: [L, S] is shared by every batch entry, [B, 1, 1, S] is a per-batch key padding
// mask, and so on. Errors: ShapeError for shapes that do not fit, ValueError for is_causal
// together with attn_mask, a non-finite scale, or a boolean mask value other than 0/1.
[[nodiscard]] CVATTN_EXPORT AttentionResult
scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                             const Tensor& attn_mask = {}, const SdpaOptions& options = {});

// The per-head entry MultiheadAttention uses (docs/modules.md §12 steps 3-7) without copying heads
// out: the H heads are column blocks of the packed projections, head h of query being
// query[b, :, h*E:(h+1)*E].
//   query [B, L, H*E], key [B, S, H*E], value [B, S, H*Ev]  (E = query.dim(-1) / num_heads)
//   output [B, L, H*Ev] with head h in columns [h*Ev, (h+1)*Ev) (the concatenation MHA feeds to
//   out_proj); attn_weights [B, H, L, S] per head (average over H yourself if wanted).
//   attn_mask must broadcast to [B, H, L, S]: [L, S] shared, [B*H, L, S] reshaped to
//   [B, H, L, S], or a combined key-padding mask [B, 1, 1, S]. MHA's bool convention
//   (True = NOT allowed) must be converted to an additive mask by the caller.
// Work is split over B*H heads (and blocks of query rows) like scaled_dot_product_attention.
[[nodiscard]] CVATTN_EXPORT AttentionResult scaled_dot_product_attention_heads(
    const Tensor& query, const Tensor& key, const Tensor& value, std::int64_t num_heads,
    const Tensor& attn_mask = {}, const SdpaOptions& options = {});

// As scaled_dot_product_attention_heads, but attn_weights is [B, L, S], the mean over the heads
// (PyTorch: weights.sum(dim=1) / num_heads, MultiheadAttention's average_attn_weights), made
// whatever options.need_weights() says; the kernel accumulates it row by row without writing
// and re-reading [B, H, L, S] maps.
[[nodiscard]] CVATTN_EXPORT AttentionResult scaled_dot_product_attention_heads_averaged(
    const Tensor& query, const Tensor& key, const Tensor& value, std::int64_t num_heads,
    const Tensor& attn_mask = {}, const SdpaOptions& options = {});

// Self-attention straight from one packed in-projection, as the two above with query, key and
// value the three column blocks of qkv [B, L, 3*H*E] (nn.MultiheadAttention's in_proj_weight
// applied once, or timm's Attention.qkv): Q = qkv[..., 0:H*E], K = qkv[..., H*E:2*H*E],
// V = qkv[..., 2*H*E:], read in place (no copies). S = L and Ev = E; output [B, L, H*E].
[[nodiscard]] CVATTN_EXPORT AttentionResult
scaled_dot_product_attention_qkv(const Tensor& qkv, std::int64_t num_heads,
                                 const Tensor& attn_mask = {}, const SdpaOptions& options = {});
[[nodiscard]] CVATTN_EXPORT AttentionResult scaled_dot_product_attention_qkv_averaged(
    const Tensor& qkv, std::int64_t num_heads, const Tensor& attn_mask = {},
    const SdpaOptions& options = {});

// x [N, C, H, W] -> tokens [N, H*W, C] (token index h*W + w, docs/modules.md §0.1).
[[nodiscard]] CVATTN_EXPORT Tensor flatten_spatial(const Tensor& x);
// tokens [N, H*W, C] -> [N, C, H, W]; ShapeError when the middle dim is not H*W.
[[nodiscard]] CVATTN_EXPORT Tensor unflatten_spatial(const Tensor& tokens, std::int64_t height,
                                                     std::int64_t width);

}  // namespace cvattn::functional

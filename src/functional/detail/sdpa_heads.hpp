#pragma once
// The head-averaged variant of scaled_dot_product_attention_heads, for MultiheadAttention's
// average_attn_weights: the kernel accumulates the [B, L, S] mean over the heads (PyTorch:
// weights.sum(dim=1) / num_heads) row by row, without writing and re-reading [B, H, L, S] maps.
// Private to cvattn; defined in functional/attention.cpp.
#include <cstdint>

#include "cvattn/functional/attention.hpp"

namespace cvattn::detail {

// As scaled_dot_product_attention_heads, but attn_weights is [B, L, S], the mean over the
// heads (made whatever options.need_weights() says).
functional::AttentionResult scaled_dot_product_attention_heads_averaged(
    const Tensor& query, const Tensor& key, const Tensor& value, std::int64_t num_heads,
    const Tensor& attn_mask, const functional::SdpaOptions& options);

}  // namespace cvattn::detail

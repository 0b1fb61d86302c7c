#pragma once
// MultiheadAttention: torch.nn.MultiheadAttention(batch_first=True), docs/modules.md §12.
//
//   Q = query Wq^T + bq,  K = key Wk^T + bk,  V = value Wv^T + bv          [B, L|S, E]
//   head h = feature columns [h*d, (h+1)*d), d = E / num_heads
//   P_h = softmax(Q_h K_h^T / sqrt(d) + masks),  O_h = P_h V_h            (concatenated)
//   output = O Wo^T + bo;  attn_weights = P [B, H, L, S], or its mean over H
//
// The heads are column blocks of the projections and go to
// functional::scaled_dot_product_attention_heads without being copied out.
//
// state_dict keys (PyTorch's, loaded unchanged): in_proj_weight [3E, E] (rows Wq, Wk, Wv) or,
// when kdim or vdim differs from E, q_proj_weight [E, E], k_proj_weight [E, kdim],
// v_proj_weight [E, vdim]; in_proj_bias [3E] and out_proj.bias [E] with bias; out_proj.weight
// [E, E]; bias_k, bias_v [1, 1, E] with add_bias_kv.
//
// A query row whose keys are all masked gets zero weights and a zero output (PyTorch >= 2.5's
// SDPA rule), where PyTorch's need_weights path gives NaN.
#include <cstdint>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/attention.hpp"

namespace cvattn {

class CVATTN_EXPORT MultiheadAttentionOptions {
 public:
  MultiheadAttentionOptions(std::int64_t embed_dim, std::int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads) {}

  // embed_dim, kdim, vdim, bias and add_bias_kv from the keys and their shapes (num_heads is
  // not in a state_dict). ValueError naming the key when a tensor is missing or malformed.
  [[nodiscard]] static MultiheadAttentionOptions from_state_dict(const StateDict& dict,
                                                                 std::int64_t num_heads);
  // The same from the keys under `prefix` ("encoder.layers.encoder_layer_0.self_attention").
  [[nodiscard]] static MultiheadAttentionOptions from_state_dict(const StateDict& dict,
                                                                 const std::string& prefix,
                                                                 std::int64_t num_heads);

  CVATTN_ARG(std::int64_t, embed_dim);
  CVATTN_ARG(std::int64_t, num_heads);
  CVATTN_ARG(bool, bias) = true;
  CVATTN_ARG(bool, add_bias_kv) = false;    // bias_k / bias_v appended as one more key
  CVATTN_ARG(bool, add_zero_attn) = false;  // an all-zero key/value appended per head
  CVATTN_ARG(std::int64_t, kdim) = 0;       // 0: embed_dim
  CVATTN_ARG(std::int64_t, vdim) = 0;       // 0: embed_dim

 public:
  [[nodiscard]] std::int64_t key_dim() const noexcept { return kdim_ ? kdim_ : embed_dim_; }
  [[nodiscard]] std::int64_t value_dim() const noexcept { return vdim_ ? vdim_ : embed_dim_; }
  // PyTorch's _qkv_same_embed_dim: one packed in_proj_weight.
  [[nodiscard]] bool packed() const noexcept {
    return key_dim() == embed_dim_ && value_dim() == embed_dim_;
  }
};

// The per-call arguments of forward (PyTorch's keyword arguments).
struct MultiheadAttentionCall {
  // [B, S] (or [S] for unbatched inputs). boolean: 1 = ignore this key; additive: added.
  CVATTN_ARG(Tensor, key_padding_mask);
  CVATTN_ARG(functional::MaskType, key_padding_mask_type) = functional::MaskType::boolean;
  // [L, S] shared by every batch entry and head, or [B*H, L, S] (index b*H + h).
  // boolean: 1 = NOT allowed (MHA's convention, the opposite of SDPA's); additive: added.
  CVATTN_ARG(Tensor, attn_mask);
  CVATTN_ARG(functional::MaskType, attn_mask_type) = functional::MaskType::boolean;
  CVATTN_ARG(bool, need_weights) = true;
  CVATTN_ARG(bool, average_attn_weights) = true;
};

class CVATTN_EXPORT MultiheadAttention final : public Module {
 public:
  // Parameters start at zero; load them with load_state_dict. ValueError unless embed_dim >= 1,
  // num_heads >= 1 divides it, and kdim, vdim >= 0.
  explicit MultiheadAttention(const MultiheadAttentionOptions& options);

  // query [B, L, E], key [B, S, kdim], value [B, S, vdim] (or the unbatched [L, E], [S, kdim],
  // [S, vdim]) -> output [B, L, E] ([L, E]) and, with need_weights, attn_weights [B, L, S]
  // averaged over heads or [B, H, L, S] per head (S + 1 per appended bias_k / zero key).
  // ShapeError for shapes that do not fit, ValueError for a boolean mask value other than 0/1.
  [[nodiscard]] functional::AttentionResult forward(const Tensor& query, const Tensor& key,
                                                    const Tensor& value,
                                                    const MultiheadAttentionCall& call = {}) const;

  // Attention between feature maps: x [N, E, H, W] attends to context [N, kdim, Hc, Wc]
  // (tokens h*W + w, flatten_spatial), used as both key and value (kdim == vdim). Returns the
  // output as a map [N, E, H, W] and attn_weights [N, H*W, Hc*Wc] (or per head).
  [[nodiscard]] functional::AttentionResult forward_maps(
      const Tensor& x, const Tensor& context, const MultiheadAttentionCall& call = {}) const;
  // Self-attention over the H*W positions of x [N, E, H, W].
  [[nodiscard]] functional::AttentionResult forward_maps(
      const Tensor& x, const MultiheadAttentionCall& call = {}) const {
    return forward_maps(x, x, call);
  }

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const MultiheadAttentionOptions& options() const noexcept { return options_; }

 private:
  MultiheadAttentionOptions options_;
  Tensor in_proj_weight_, q_proj_weight_, k_proj_weight_, v_proj_weight_, in_proj_bias_;
  Tensor bias_k_, bias_v_;
  Tensor out_proj_weight_, out_proj_bias_;
};

}  // namespace cvattn

#include "cvattn/modules/multihead_self_attention.hpp"

#include <utility>

#include "cvattn/core/error.hpp"

namespace cvattn {

MultiheadSelfAttention::MultiheadSelfAttention(const MultiheadAttentionOptions& options,
                                               const MultiheadAttentionCall& call)
    : MultiheadSelfAttention(std::make_shared<MultiheadAttention>(options), call) {}

MultiheadSelfAttention::MultiheadSelfAttention(std::shared_ptr<MultiheadAttention> attention,
                                               const MultiheadAttentionCall& call)
    : attention_(std::move(attention)), call_(call) {
  CVATTN_CHECK(attention_ != nullptr, ValueError, "MultiheadSelfAttention: module is null");
  CVATTN_CHECK(attention_->options().packed(), ValueError, "MultiheadSelfAttention: kdim (",
               attention_->options().key_dim(), ") and vdim (", attention_->options().value_dim(),
               ") must equal embed_dim (", attention_->options().embed_dim(),
               ") for self-attention");
  register_inline_module(attention_);
}

Tensor MultiheadSelfAttention::forward(const Tensor& x) const {
  MultiheadAttentionCall call = call_;
  call.need_weights(false);
  return attention_->forward(x, x, x, call).output;
}

Attended MultiheadSelfAttention::forward_with_maps(const Tensor& x) const {
  MultiheadAttentionCall call = call_;
  call.need_weights(true);
  functional::AttentionResult r = attention_->forward(x, x, x, call);
  Attended out;
  out.output = std::move(r.output);
  out.maps.add(maps::kAttnWeights, std::move(r.attn_weights));
  return out;
}

std::string MultiheadSelfAttention::describe() const {
  return "MultiheadSelfAttention(" + attention_->describe() + ")";
}

}  // namespace cvattn

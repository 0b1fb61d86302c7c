#pragma once
// MultiheadSelfAttention: a MultiheadAttention run as self-attention, as a UnaryModule, so that it
// can sit in a Sequential or be run by call_child: x [N, L, E] -> forward(x, x, x) [N, L, E]
// (batch_first, as torchvision's EncoderBlock calls self.self_attention(x, x, x)).
// forward_with_maps adds map "attn_weights" [N, L, L] (averaged over heads) or [N, H, L, L]
// (call.average_attn_weights(false)).
//
// The wrapped module's parameters are this module's own, with no name segment added, so its
// state_dict keys are nn.MultiheadAttention's: "in_proj_weight", "out_proj.weight", ...
// ("encoder.layers.encoder_layer_0.self_attention.in_proj_weight" when registered as
// "self_attention").
#include <memory>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/multihead_attention.hpp"

namespace cvattn {

class CVATTN_EXPORT MultiheadSelfAttention final : public UnaryModule {
 public:
  // A fresh MultiheadAttention(options). `call` holds the masks and switches used on every
  // forward; need_weights is ignored (forward asks for no weights, forward_with_maps for them).
  // ValueError when kdim or vdim differs from embed_dim (self-attention needs neither).
  explicit MultiheadSelfAttention(const MultiheadAttentionOptions& options,
                                  const MultiheadAttentionCall& call = {});
  // Wraps an existing module (shared: loading either loads both). ValueError if null.
  explicit MultiheadSelfAttention(std::shared_ptr<MultiheadAttention> attention,
                                  const MultiheadAttentionCall& call = {});

  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;
  // "MultiheadSelfAttention(<the wrapped module's describe()>)"
  [[nodiscard]] std::string describe() const override;

  [[nodiscard]] const MultiheadAttention& attention() const noexcept { return *attention_; }

 private:
  std::shared_ptr<MultiheadAttention> attention_;
  MultiheadAttentionCall call_;
};

}  // namespace cvattn

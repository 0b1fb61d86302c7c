#pragma once
// GlobalContext: timm's GlobalContext (layers/global_context.py), GCNet's global context block
// (docs/gates.md):
//
//   use_attn:  a = softmax_p(conv_attn(x)),  ctx[n, c] = sum_p x[n, c, p] a[n, p]
//              (map "attention" [N, 1, H, W]); else ctx = mean_hw(x)
//   mlp(v)   = fc2(ReLU(LayerNorm(fc1(v))))  1x1 convs with biases C -> R -> C, LayerNorm over
//              the R channels (timm's LayerNorm2d, eps 1e-6)
//   y = x * gate(mlp_scale(ctx)) (fuse_scale; map "channel_attention" [N, C])
//       + mlp_add(ctx)           (fuse_add)
//
// state_dict keys: conv_attn.weight [1, C, 1, 1], conv_attn.bias [1] (use_attn);
// mlp_add.* and mlp_scale.* each fc1.weight [R, C, 1, 1], fc1.bias [R], norm.weight [R],
// norm.bias [R], fc2.weight [C, R, 1, 1], fc2.bias [C].
#include <cstdint>
#include <memory>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/layer_kinds.hpp"

namespace cvattn {

class CVATTN_EXPORT GlobalContextOptions {
 public:
  explicit GlobalContextOptions(std::int64_t channels) : channels_(channels) {}

  // C, R, use_attn, fuse_add and fuse_scale from the keys under prefix (conv_attn.*,
  // mlp_add.*, mlp_scale.*); gate_layer keeps its default. ValueError naming the key on a
  // missing or malformed tensor, or when the two MLPs disagree.
  [[nodiscard]] static GlobalContextOptions from_state_dict(const StateDict& dict,
                                                            const std::string& prefix = "");

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(bool, use_attn) = true;
  CVATTN_ARG(bool, fuse_add) = false;
  CVATTN_ARG(bool, fuse_scale) = true;
  CVATTN_ARG(std::int64_t, rd_channels) = 0;  // 0: make_divisible(C / 8, 1, round_limit 0)
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::sigmoid;
};

class CVATTN_EXPORT GlobalContext final : public UnaryModule {
 public:
  explicit GlobalContext(const GlobalContextOptions& options);

  // x [N, C, H, W], H, W >= 1 -> y of that shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus maps "attention" [N, 1, H, W] (use_attn) and "channel_attention"
  // [N, C] (fuse_scale).
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const GlobalContextOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t reduced_channels() const noexcept { return rd_; }

 private:
  struct Mlp {
    Tensor fc1_weight, fc1_bias, norm_weight, norm_bias, fc2_weight, fc2_bias;
  };
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;
  [[nodiscard]] Tensor mlp(const Mlp& m, const Tensor& v) const;
  Mlp register_mlp(const std::string& name);

  GlobalContextOptions options_;
  std::int64_t rd_;
  Tensor attn_weight_, attn_bias_;
  Mlp add_, scale_;
};

}  // namespace cvattn

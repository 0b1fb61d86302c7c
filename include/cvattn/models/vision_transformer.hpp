#pragma once
// timm's VisionTransformer (models/vision_transformer.py) and DeiT's distilled variant
// (models/deit.py), with timm's state_dict keys unchanged:
//
//   patch_embed.proj   Conv2d(3, D, p, stride p) -> tokens [N, (H/p)*(W/p), D]
//   cls_token [1,1,D] (, dist_token [1,1,D]) prepended, + pos_embed [1, T, D]
//   blocks.<i>         x = x + attn(norm1(x)); x = x + mlp(norm2(x))   (LayerNorm eps 1e-6)
//     attn             qkv Linear(D, 3D) -> heads -> softmax(q k^T / sqrt(D/H)) v -> proj
//     mlp              fc1 Linear(D, 4D) -> GELU -> fc2 Linear(4D, D)
//   norm               LayerNorm; features = token 0 (distilled: (token 0 + token 1) / 2)
//   head (, head_dist) logits = head(token 0) (distilled: (head(t0) + head_dist(t1)) / 2)
//
// As timm.create_model's default (strict_img_size, no dynamic_img_size), only the configured
// image size is accepted. Maps: "blocks.<i>.attn.attention" [N, heads, T, T]; attention
// rollout over all blocks (docs/modules.md §18).
#include <cstdint>
#include <memory>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/saliency.hpp"
#include "cvattn/models/network.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/normalization.hpp"

namespace cvattn::models {

inline constexpr const char* kRollout = "rollout";

// timm's Attention (layers/attention.py) without q/k norms: keys qkv.*, proj.*.
class CVATTN_EXPORT VitAttention final : public MappedModule {
 public:
  // ValueError unless num_heads divides dim.
  VitAttention(std::int64_t dim, std::int64_t num_heads, bool qkv_bias = true);
  [[nodiscard]] std::string describe() const override;

 protected:
  // x [N, T, dim] -> [N, T, dim]; map "attention" [N, heads, T, T].
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;
  void on_weights_loaded() override;

 private:
  std::int64_t dim_, heads_;
  std::shared_ptr<Linear> qkv_, proj_;
  Tensor q_weight_, k_weight_, v_weight_, q_bias_, k_bias_, v_bias_;  // row blocks of qkv
};

// timm's PatchEmbed (layers/patch_embed.py), strict image size: key proj.*.
class CVATTN_EXPORT PatchEmbed final : public UnaryModule {
 public:
  PatchEmbed(std::int64_t img_size, std::int64_t patch_size, std::int64_t in_chans,
             std::int64_t embed_dim);
  // x [N, in_chans, img_size, img_size] -> tokens [N, (img_size/patch)^2, embed_dim].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "PatchEmbed"; }
  [[nodiscard]] Pair2 grid_size() const noexcept { return {grid_, grid_}; }

 private:
  std::int64_t img_size_, in_chans_, grid_;
  std::shared_ptr<Conv2d> proj_;
};

// timm's Mlp: fc1 -> GELU (exact erf) -> fc2.
class CVATTN_EXPORT VitMlp final : public UnaryModule {
 public:
  VitMlp(std::int64_t dim, std::int64_t hidden);
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "Mlp"; }

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
};

// timm's vision_transformer.Block (pre-norm, no layer scale): keys norm1, attn, norm2, mlp.
class CVATTN_EXPORT VitBlock final : public MappedModule {
 public:
  VitBlock(std::int64_t dim, std::int64_t num_heads, double mlp_ratio = 4.0, double eps = 1e-6);
  [[nodiscard]] std::string describe() const override { return "Block"; }

 protected:
  // Map "attn.attention".
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;

 private:
  std::shared_ptr<LayerNorm> norm1_, norm2_;
  std::shared_ptr<VitAttention> attn_;
  std::shared_ptr<VitMlp> mlp_;
};

class CVATTN_EXPORT VisionTransformerOptions {
 public:
  VisionTransformerOptions(std::int64_t embed_dim, std::int64_t depth, std::int64_t num_heads)
      : embed_dim_(embed_dim), depth_(depth), num_heads_(num_heads) {}
  CVATTN_ARG(std::int64_t, embed_dim);
  CVATTN_ARG(std::int64_t, depth);
  CVATTN_ARG(std::int64_t, num_heads);
  CVATTN_ARG(std::string, model_name) = "vit";
  CVATTN_ARG(std::int64_t, img_size) = 224;
  CVATTN_ARG(std::int64_t, patch_size) = 16;
  CVATTN_ARG(std::int64_t, in_chans) = 3;
  CVATTN_ARG(std::int64_t, num_classes) = 1000;
  CVATTN_ARG(double, mlp_ratio) = 4.0;
  CVATTN_ARG(bool, distilled) = false;  // DeiT: dist_token and head_dist
};

class CVATTN_EXPORT VisionTransformer final : public Network {
 public:
  explicit VisionTransformer(const VisionTransformerOptions& options);

  // x [N >= 1, in_chans, img_size, img_size]; ShapeError otherwise (timm's strict image size).
  [[nodiscard]] NetworkOutput run(const Tensor& x, bool keep_maps = true) const override;
  [[nodiscard]] bool has_rollout() const override { return true; }
  // Attention rollout of run(x, true)'s maps: [N, gh, gw].
  [[nodiscard]] Tensor rollout(const NetworkOutput& out,
                               functional::HeadFusion head_fusion = functional::HeadFusion::mean,
                               double discard_ratio = 0.0) const override;

  [[nodiscard]] const std::string& model_name() const override { return options_.model_name(); }
  [[nodiscard]] std::int64_t num_classes() const override { return options_.num_classes(); }
  [[nodiscard]] std::int64_t num_features() const override { return options_.embed_dim(); }
  [[nodiscard]] std::int64_t num_prefix_tokens() const noexcept {
    return options_.distilled() ? 2 : 1;
  }
  [[nodiscard]] std::string describe() const override;

 private:
  VisionTransformerOptions options_;
  Tensor cls_token_, pos_embed_, dist_token_;
  std::shared_ptr<PatchEmbed> patch_embed_;
  std::shared_ptr<BlockList> blocks_;
  std::shared_ptr<LayerNorm> norm_;
  std::shared_ptr<Linear> head_, head_dist_;
};

}  // namespace cvattn::models

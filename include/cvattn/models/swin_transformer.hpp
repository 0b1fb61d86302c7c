#pragma once
// timm's SwinTransformer (models/swin_transformer.py) with its state_dict keys unchanged. Tokens
// stay channels-last, x [N, H, W, C], as timm keeps them (output_fmt 'NHWC'):
//
//   patch_embed        proj Conv2d(3, D, p, stride p) -> NHWC -> norm LayerNorm
//   layers.<i>         a stage: downsample (PatchMerging, stages i > 0), then blocks.<j>
//     downsample       2x2 neighbours gathered to 4C -> norm LayerNorm(4C) -> reduction Linear
//                      (4C -> 2C, no bias)
//     blocks.<j>       x = x + reverse(attn(partition(roll(norm1(x), -shift)))), rolled back;
//                      x = x + mlp(norm2(x)). Odd blocks shift by window // 2.
//       attn           qkv Linear(C, 3C) -> per window and head
//                      softmax(q k^T * head_dim^-0.5 + relative position bias + shift mask) v
//                      -> proj Linear(C, C); relative_position_bias_table
//                      [(2*wh-1)*(2*ww-1), heads]
//       mlp            fc1 -> GELU -> fc2 (timm's Mlp)
//   norm               LayerNorm; features = mean over H, W (the head's global average pool)
//   head.fc            Linear -> logits
//
// Like timm's _calc_window_shift, a block whose resolution is not larger than the window along
// an axis uses the resolution as its window there and does not shift along it (the last stage of
// swin_tiny_patch4_window7_224, 7x7 with window 7, never shifts). All LayerNorms have eps 1e-5.
// As timm.create_model's default (strict_img_size), only the configured image size is
// accepted: the shift masks are made for it. Maps: "layers.<i>.blocks.<j>.attn.attention"
// [N * windows, heads, wh*ww, wh*ww], windows in timm's order (window_partition), post-softmax
// with the shift mask applied. The head is global average pooling + one linear layer, so the
// class activation map (docs/modules.md §18) is defined on the final normed map.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/models/network.hpp"
#include "cvattn/models/vision_transformer.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/normalization.hpp"

namespace cvattn::models {

// timm's PatchEmbed as Swin builds it (norm_layer LayerNorm, output_fmt 'NHWC', strict image
// size): keys proj.*, norm.*.
class CVATTN_EXPORT SwinPatchEmbed final : public UnaryModule {
 public:
  // ValueError unless patch_size >= 1 and img_size >= patch_size (grid = img_size / patch, floor).
  SwinPatchEmbed(Pair2 img_size, std::int64_t patch_size, std::int64_t in_chans,
                 std::int64_t embed_dim);
  // x [N >= 1, in_chans, img_h, img_w] -> [N, img_h / patch, img_w / patch, embed_dim].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override { return "PatchEmbed"; }
  [[nodiscard]] Pair2 grid_size() const noexcept { return grid_; }

 private:
  Pair2 img_size_, grid_;
  std::int64_t in_chans_;
  std::shared_ptr<Conv2d> proj_;
  std::shared_ptr<LayerNorm> norm_;
};

// timm's WindowAttention: keys relative_position_bias_table, qkv.*, proj.*.
class CVATTN_EXPORT WindowAttention final : public MappedModule {
 public:
  // ValueError unless num_heads divides dim and the window is at least 1x1.
  WindowAttention(std::int64_t dim, std::int64_t num_heads, Pair2 window);
  [[nodiscard]] std::string describe() const override;

  // windows [B, wh*ww, dim] -> [B, wh*ww, dim] with `bias` (relative_position_bias(), or that
  // plus a shift mask, [nW, heads, A, A] with B a multiple of nW) added to the scaled scores;
  // map "attention" [B, heads, A, A].
  [[nodiscard]] Attended attend(const Tensor& windows, const Tensor& bias, bool keep_maps) const;
  // The table gathered by the relative position index: [heads, A, A] (cached at load).
  [[nodiscard]] const Tensor& relative_position_bias() const noexcept { return bias_; }
  [[nodiscard]] Pair2 window() const noexcept { return window_; }
  [[nodiscard]] std::int64_t num_heads() const noexcept { return heads_; }

 protected:
  // Without a mask (a block that does not shift).
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;
  void on_weights_loaded() override;

 private:
  std::int64_t dim_, heads_;
  Pair2 window_;
  Tensor table_, bias_;
  std::shared_ptr<Linear> qkv_, proj_;
};

class CVATTN_EXPORT SwinBlockOptions {
 public:
  SwinBlockOptions(std::int64_t dim, std::int64_t num_heads, Pair2 input_resolution)
      : dim_(dim), num_heads_(num_heads), input_resolution_(input_resolution) {}
  CVATTN_ARG(std::int64_t, dim);
  CVATTN_ARG(std::int64_t, num_heads);
  CVATTN_ARG(Pair2, input_resolution);        // H, W of the tokens the block is built for
  CVATTN_ARG(Pair2, window_size) = Pair2(7);  // before timm's clamp to the resolution
  CVATTN_ARG(Pair2, shift_size) = Pair2(0);   // timm: 0 for even blocks, window // 2 for odd
  CVATTN_ARG(double, mlp_ratio) = 4.0;
};

// timm's SwinTransformerBlock: keys norm1, attn, norm2, mlp.
class CVATTN_EXPORT SwinTransformerBlock final : public MappedModule {
 public:
  // ValueError on invalid options (a shift not smaller than the window).
  explicit SwinTransformerBlock(const SwinBlockOptions& options);
  [[nodiscard]] std::string describe() const override;
  // The window and shift after timm's clamp to the input resolution.
  [[nodiscard]] Pair2 window_size() const noexcept { return window_; }
  [[nodiscard]] Pair2 shift_size() const noexcept { return shift_; }
  [[nodiscard]] const SwinBlockOptions& options() const noexcept { return options_; }

 protected:
  // x [N, H, W, dim] with (H, W) the input resolution -> the same shape; map
  // "attn.attention" [N * windows, heads, A, A].
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;
  void on_weights_loaded() override;

 private:
  SwinBlockOptions options_;
  Pair2 window_, shift_;
  Tensor mask_;  // [nW, A, A] shift mask, undefined without a shift
  Tensor bias_;  // the attention's bias, plus the mask when shifting
  std::shared_ptr<LayerNorm> norm1_, norm2_;
  std::shared_ptr<WindowAttention> attn_;
  std::shared_ptr<VitMlp> mlp_;
};

// timm's PatchMerging: keys norm.* [4 dim], reduction.weight [out_dim, 4 dim].
class CVATTN_EXPORT PatchMerging final : public UnaryModule {
 public:
  // out_dim 0: 2 * dim, as timm.
  explicit PatchMerging(std::int64_t dim, std::int64_t out_dim = 0);
  // x [N, H, W, dim] -> [N, ceil(H/2), ceil(W/2), out_dim].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  std::int64_t dim_, out_dim_;
  std::shared_ptr<LayerNorm> norm_;
  std::shared_ptr<Linear> reduction_;
};

// timm's SwinTransformerStage: downsample (when given) then blocks.<j>, shifting odd blocks by
// window // 2. Maps "blocks.<j>.attn.attention".
class CVATTN_EXPORT SwinTransformerStage final : public MappedModule {
 public:
  // input_resolution: the tokens entering the stage; the blocks see it halved (floor, as timm)
  // when downsample is true.
  SwinTransformerStage(std::int64_t dim, std::int64_t out_dim, Pair2 input_resolution,
                       std::int64_t depth, bool downsample, std::int64_t num_heads,
                       Pair2 window_size, double mlp_ratio = 4.0);
  [[nodiscard]] std::string describe() const override { return "SwinTransformerStage"; }
  [[nodiscard]] Pair2 output_resolution() const noexcept { return output_resolution_; }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;

 private:
  Pair2 output_resolution_;
  std::shared_ptr<PatchMerging> downsample_;
  std::shared_ptr<BlockList> blocks_;
};

class CVATTN_EXPORT SwinTransformerOptions {
 public:
  SwinTransformerOptions() = default;
  CVATTN_ARG(std::string, model_name) = "swin";
  CVATTN_ARG(Pair2, img_size) = Pair2(224);
  CVATTN_ARG(std::int64_t, patch_size) = 4;
  CVATTN_ARG(std::int64_t, in_chans) = 3;
  CVATTN_ARG(std::int64_t, num_classes) = 1000;
  CVATTN_ARG(std::int64_t, embed_dim) = 96;
  CVATTN_ARG(std::vector<std::int64_t>, depths) = {2, 2, 6, 2};
  CVATTN_ARG(std::vector<std::int64_t>, num_heads) = {3, 6, 12, 24};
  CVATTN_ARG(Pair2, window_size) = Pair2(7);
  CVATTN_ARG(double, mlp_ratio) = 4.0;
};

class CVATTN_EXPORT SwinTransformer final : public Network {
 public:
  // Weights start at zero; load with load_state_dict. ValueError on invalid options.
  explicit SwinTransformer(const SwinTransformerOptions& options);

  // x [N >= 1, in_chans, img_h, img_w]; ShapeError otherwise (timm's strict image size).
  // feature_map is the final normed map as [N, C, h, w].
  [[nodiscard]] NetworkOutput run(const Tensor& x, bool keep_maps = true) const override;
  [[nodiscard]] const std::string& model_name() const override { return options_.model_name(); }
  [[nodiscard]] std::int64_t num_classes() const override { return options_.num_classes(); }
  [[nodiscard]] std::int64_t num_features() const override { return num_features_; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const SwinTransformerOptions& options() const noexcept { return options_; }

 protected:
  [[nodiscard]] Tensor cam_weight() const override { return fc_->weight(); }

 private:
  SwinTransformerOptions options_;
  std::int64_t num_features_ = 0;
  std::shared_ptr<SwinPatchEmbed> patch_embed_;
  std::shared_ptr<BlockList> layers_;
  std::shared_ptr<LayerNorm> norm_;
  std::shared_ptr<Linear> fc_;
};

}  // namespace cvattn::models

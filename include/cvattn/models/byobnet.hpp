#pragma once
// timm's ByobNet (models/byobnet.py) as configured for its self-attention networks
// (models/byoanet.py): botnet26t_256, halonet26t, lambda_resnet26t. The blocks are reusable
// modules and the network keeps timm's state_dict keys unchanged.
//
//   stem     'tiered': stem.conv1 (3x3 s2, 3c/8), stem.conv2 (3x3, c/2), stem.conv3 (3x3, c),
//            each a ConvNormAct (conv + BN + ReLU), then MaxPool 3x3 s2 p1 ('maxpool')
//   stages.<i>.<j>  blocks; the first of a stage strides; the shortcut is a projection when the
//            stride or the width changes: ConvNormAct 1x1 with stride ('conv1x1', keys
//            shortcut.conv/.bn) or AvgPool2d(2, ceil, count_include_pad=False) + ConvNormAct 1x1
//            ('avg', keys shortcut.conv.conv/.bn), no activation
//   head     global average pooling -> features [N, C] -> head.fc Linear -> logits
//            (timm's ClassifierHead; no final_conv for these models: num_features = 0)
//
// Blocks (timm's forward order; mid = make_divisible(out * bottle_ratio, 8)):
//   BottleneckBlock: conv1_1x1 -> conv2_kxk (3x3, stride, groups) -> conv3_1x1 (no act)
//                    -> + shortcut -> ReLU
//   SelfAttnBlock:   conv1_1x1 -> self_attn (stride) -> post_attn (BatchNorm + ReLU)
//                    -> conv3_1x1 (no act) -> + shortcut -> ReLU
// self_attn is BottleneckAttn (feat_size fixed by img_size), HaloAttn or LambdaLayer with
// their defaults and the model's self_attn_kwargs. Each ConvNormAct folds its BatchNorm.
//
// Maps by path relative to the block: "self_attn.attention" (BottleneckAttn
// [N, heads, HW, HW], HaloAttn [N, heads, blocks, bq^2, win^2]; LambdaLayer has none); the
// network prefixes "stages.<i>.<j>.".
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/models/network.hpp"
#include "cvattn/models/resnet.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/linear.hpp"

namespace cvattn::models {

enum class ByobBlockType { bottle, self_attn };         // timm's 'bottle', 'self_attn'
enum class SelfAttnLayer { bottleneck, halo, lambda };  // timm's get_attn names
enum class ByobDownsample { conv1x1, avg };             // ByoModelCfg.downsample

// The self-attention layer of SelfAttnBlocks and its self_attn_kwargs (the rest are the
// layer's defaults: BottleneckAttn 4 heads, HaloAttn 8 heads, LambdaLayer 4 heads of 16).
struct SelfAttnConfig {
  SelfAttnLayer layer = SelfAttnLayer::bottleneck;
  std::int64_t block_size = 8;  // HaloAttn
  std::int64_t halo_size = 3;   // HaloAttn
  std::int64_t r = 9;           // LambdaLayer: local context r x r (0: relative embeddings)
};

// TieredStem: timm's create_byob_stem(stem_type='tiered', pool_type='maxpool').
class CVATTN_EXPORT TieredStem final : public UnaryModule {
 public:
  // ValueError unless out_channels >= 8 and in_channels >= 1.
  TieredStem(std::int64_t in_channels, std::int64_t out_channels);
  // [N, in, H, W] -> [N, out, ceil(ceil(H/2)/2), ...] (stride 4).
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::int64_t out_channels() const noexcept { return out_channels_; }

 private:
  std::int64_t out_channels_;
  std::shared_ptr<ConvNormAct> conv1_, conv2_, conv3_;
};

class CVATTN_EXPORT ByobBlockOptions {
 public:
  ByobBlockOptions(std::int64_t in_channels, std::int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}
  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, out_channels);
  CVATTN_ARG(std::int64_t, stride) = 1;
  CVATTN_ARG(double, bottle_ratio) = 1.0;
  CVATTN_ARG(std::int64_t, group_size) = 0;  // BottleneckBlock's 3x3: 0 = one group
  CVATTN_ARG(ByobDownsample, downsample) = ByobDownsample::conv1x1;
  CVATTN_ARG(SelfAttnConfig, self_attn) = SelfAttnConfig();  // SelfAttnBlock only
  CVATTN_ARG(Pair2, feat_size) = Pair2(0);  // input size of BottleneckAttn (required there)
};

// The blocks of a ByobNet stage; forward_with_maps gives maps by path relative to the block.
class CVATTN_EXPORT ByobBlock : public MappedModule {
 public:
  [[nodiscard]] const ByobBlockOptions& options() const noexcept { return options_; }
  // make_divisible(out_channels * bottle_ratio, 8).
  [[nodiscard]] std::int64_t mid_channels() const noexcept { return mid_; }

 protected:
  explicit ByobBlock(const ByobBlockOptions& options);
  // Registers "shortcut" when the stride or the width changes (timm's create_shortcut).
  void register_shortcut();
  // shortcut(identity) + y, then ReLU; ShapeError naming the block on a shape mismatch.
  [[nodiscard]] Tensor finish(const Tensor& y, const Tensor& identity) const;

  ByobBlockOptions options_;
  std::int64_t mid_ = 0;

 private:
  std::shared_ptr<UnaryModule> shortcut_;
};

// timm's BottleneckBlock (byobnet.py) without attn layers: no maps.
class CVATTN_EXPORT BottleneckBlock final : public ByobBlock {
 public:
  explicit BottleneckBlock(const ByobBlockOptions& options);
  [[nodiscard]] std::string describe() const override;

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;

 private:
  std::shared_ptr<ConvNormAct> conv1_, conv2_, conv3_;
};

// timm's SelfAttnBlock (byobnet.py) with post_attn BatchNorm + ReLU: map
// "self_attn.attention" when the layer has one.
class CVATTN_EXPORT SelfAttnBlock final : public ByobBlock {
 public:
  // ValueError on invalid options (BottleneckAttn needs feat_size; the layers' own checks).
  explicit SelfAttnBlock(const ByobBlockOptions& options);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const UnaryModule& self_attn() const noexcept { return *self_attn_; }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;

 private:
  std::shared_ptr<ConvNormAct> conv1_, conv3_;
  std::shared_ptr<UnaryModule> self_attn_;
  std::shared_ptr<BatchNorm2d> post_attn_;
};

// One stage of a ByobNet: its blocks' types (expanded: one per block), output channels,
// the first block's stride and the bottleneck ratio.
struct ByobStage {
  std::vector<ByobBlockType> blocks;
  std::int64_t channels = 0;
  std::int64_t stride = 2;
  double bottle_ratio = 1.0;
};

class CVATTN_EXPORT ByobNetOptions {
 public:
  explicit ByobNetOptions(std::vector<ByobStage> stages) : stages_(std::move(stages)) {}
  CVATTN_ARG(std::vector<ByobStage>, stages);
  CVATTN_ARG(std::string, model_name) = "byobnet";
  CVATTN_ARG(std::int64_t, num_classes) = 1000;
  CVATTN_ARG(std::int64_t, in_chans) = 3;
  CVATTN_ARG(std::int64_t, stem_chs) = 64;  // the tiered stem's width
  CVATTN_ARG(ByobDownsample, downsample) = ByobDownsample::conv1x1;
  CVATTN_ARG(SelfAttnConfig, self_attn) = SelfAttnConfig();
  // timm's img_size: the fixed input size (0: any size the layers accept); BottleneckAttn
  // networks require it (fixed_input_size).
  CVATTN_ARG(Pair2, img_size) = Pair2(0);
};

// timm's model_cfgs of byoanet.py for "botnet26t_256" (img_size 256), "halonet26t" and
// "lambda_resnet26t"; ValueError naming them on any other name.
[[nodiscard]] CVATTN_EXPORT ByobNetOptions byoanet_options(const std::string& model_name);

class CVATTN_EXPORT ByobNet final : public Network {
 public:
  // Weights start at zero (BatchNorms as PyTorch's fresh ones); load with load_state_dict.
  // ValueError on invalid options.
  explicit ByobNet(const ByobNetOptions& options);

  // x [N >= 1, in_chans, H, W]: (H, W) == img_size when fixed, multiples of the halo
  // attention's block grid for HaloAttn; ShapeError otherwise.
  [[nodiscard]] NetworkOutput run(const Tensor& x, bool keep_maps = true) const override;
  [[nodiscard]] const std::string& model_name() const override { return options_.model_name(); }
  [[nodiscard]] std::int64_t num_classes() const override { return options_.num_classes(); }
  [[nodiscard]] std::int64_t num_features() const override { return num_features_; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const ByobNetOptions& options() const noexcept { return options_; }

 protected:
  [[nodiscard]] Tensor cam_weight() const override { return fc_->weight(); }

 private:
  ByobNetOptions options_;
  std::int64_t num_features_ = 0;
  std::int64_t input_multiple_ = 1;  // H and W must be multiples of it (HaloAttn blocks)
  std::shared_ptr<TieredStem> stem_;
  std::shared_ptr<BlockList> stages_;  // "stages": one BlockList per stage
  std::shared_ptr<Linear> fc_;         // "head.fc"
};

}  // namespace cvattn::models

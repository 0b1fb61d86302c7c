#pragma once
// timm's ResNet family (models/resnet.py, models/sknet.py): the residual blocks as reusable
// modules and the network that stacks them, with timm's state_dict keys unchanged.
//
//   stem     conv1 (7x7 s2, or 'deep' / 'deep_tiered': three 3x3 convs as conv1.0/.3/.6), bn1,
//            ReLU, maxpool 3x3 s2 p1
//   layer1..4  blocks; the first of each stage strides (except layer1) and may downsample the
//            shortcut: downsample.0 conv 1x1 + downsample.1 BN, or with avg_down
//            downsample.0 AvgPool2d(2, stride, ceil_mode, count_include_pad=False) + .1 conv + .2
//            BN
//   head     global average pooling -> features [N, C] -> fc Linear -> logits
//
// Blocks (timm's forward order):
//   BasicBlock:           relu(bn1(conv1 3x3 s)) -> bn2(conv2 3x3) -> se -> + shortcut -> relu
//   Bottleneck:           conv1 1x1 -> conv2 3x3 s, groups=cardinality -> conv3 1x1 -> se -> ...
//                         width = floor(planes * base_width / 64) * cardinality, out = 4 * planes
//   SelectiveKernelBasic: conv1 = SelectiveKernel(stride) -> conv2 = ConvNormAct 3x3 (no act)
//                         -> se -> + shortcut -> relu
// `se` is timm's attn_layer: SEModule ('se') or EcaModule ('eca'), under the key prefix "se".
// Each BatchNorm is folded into the conv before it when the weights load.
//
// Maps by path relative to the block: "se.attention" [N, C] and, in SK blocks,
// "conv1.attention" [N, 2, C] (ResNeSt: "conv2.attention" [N, radix, width]); the network
// prefixes "layer<i>.<j>.".
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/models/network.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/eca.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/selective_kernel.hpp"
#include "cvattn/modules/split_attn.hpp"
#include "cvattn/modules/squeeze_excitation.hpp"

namespace cvattn::models {

// timm's attn_layer of a block: none, 'se' (SEModule defaults) or 'eca' (EcaModule(channels)).
enum class BlockAttention { none, se, eca };
// 'none' / 'se' / 'eca'; ValueError on any other word.
[[nodiscard]] CVATTN_EXPORT BlockAttention parse_block_attention(const std::string& word);
[[nodiscard]] CVATTN_EXPORT const char* to_string(BlockAttention attention);

// A conv followed by an inference BatchNorm, folded into one conv with bias when the weights
// load (the state_dict keys stay those of the two modules).
class CVATTN_EXPORT FoldedConvBn {
 public:
  FoldedConvBn() = default;
  FoldedConvBn(std::shared_ptr<Conv2d> conv, std::shared_ptr<BatchNorm2d> bn);
  void fold();  // after loading
  // act(bn(conv(x))), the activation fused into the conv (functional::conv2d with act).
  [[nodiscard]] Tensor operator()(const Tensor& x, ActLayer act) const;
  // bn(conv(x)), then ReLU when relu is true.
  [[nodiscard]] Tensor operator()(const Tensor& x, bool relu) const {
    return (*this)(x, relu ? ActLayer::relu : ActLayer::identity);
  }
  [[nodiscard]] const std::shared_ptr<Conv2d>& conv() const noexcept { return conv_; }

 private:
  std::shared_ptr<Conv2d> conv_;
  std::shared_ptr<BatchNorm2d> bn_;
  Tensor weight_, bias_;
  functional::Conv2dOptions options_;
  functional::Conv2dWeight prepared_;  // weight_ prepared once per fold
};

// timm's ConvNormAct (layers/conv_bn_act.py) with BatchNorm2d and optional ReLU: keys
// conv.weight, bn.*. Padding is timm's symmetric ((stride-1) + dilation*(k-1)) // 2.
class CVATTN_EXPORT ConvNormActOptions {
 public:
  ConvNormActOptions(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, out_channels);
  CVATTN_ARG(std::int64_t, kernel_size);
  CVATTN_ARG(std::int64_t, stride) = 1;
  CVATTN_ARG(std::int64_t, dilation) = 1;
  CVATTN_ARG(std::int64_t, groups) = 1;
  CVATTN_ARG(bool, apply_act) = true;  // ReLU after the norm
};

class CVATTN_EXPORT ConvNormAct final : public UnaryModule {
 public:
  explicit ConvNormAct(const ConvNormActOptions& options);
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override;

 protected:
  void on_weights_loaded() override;

 private:
  ConvNormActOptions options_;
  FoldedConvBn conv_bn_;
};

// The shortcut projection of a stage's first block (timm's downsample_conv / downsample_avg
// with down_kernel_size 1): keys 0.weight, 1.* or, with avg, 1.weight, 2.* (index 0 is the
// pool, or Identity when stride is 1).
class CVATTN_EXPORT ResNetDownsample final : public UnaryModule {
 public:
  ResNetDownsample(std::int64_t in_channels, std::int64_t out_channels, std::int64_t stride,
                   bool avg);
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  [[nodiscard]] std::string describe() const override;

 protected:
  void on_weights_loaded() override;

 private:
  std::int64_t stride_;
  bool avg_;
  FoldedConvBn conv_bn_;
};

class CVATTN_EXPORT ResNetBlockOptions {
 public:
  ResNetBlockOptions(std::int64_t inplanes, std::int64_t planes)
      : inplanes_(inplanes), planes_(planes) {}
  CVATTN_ARG(std::int64_t, inplanes);
  CVATTN_ARG(std::int64_t, planes);
  CVATTN_ARG(std::int64_t, stride) = 1;
  CVATTN_ARG(std::int64_t, cardinality) = 1;  // Bottleneck only (BasicBlock requires 1)
  CVATTN_ARG(std::int64_t, base_width) = 64;  // Bottleneck only (BasicBlock requires 64)
  CVATTN_ARG(std::int64_t, reduce_first) = 1;
  CVATTN_ARG(BlockAttention, attn_layer) = BlockAttention::none;
  // A shortcut projection (timm builds one when stride != 1 or the channels change).
  CVATTN_ARG(bool, downsample) = false;
  CVATTN_ARG(bool, avg_down) = false;  // downsample_avg instead of downsample_conv
  // SelectiveKernel settings of SK blocks (timm's sk_kwargs).
  CVATTN_ARG(double, sk_rd_ratio) = 1.0 / 16.0;
  CVATTN_ARG(std::int64_t, sk_rd_divisor) = 8;
  CVATTN_ARG(bool, sk_split_input) = true;
  // ResNestBottleneck settings (timm's block_args of models/resnest.py).
  CVATTN_ARG(std::int64_t, radix) = 2;
  CVATTN_ARG(bool, avd) = false;        // stride by an average pool instead of the 3x3 conv
  CVATTN_ARG(bool, avd_first) = false;  // that pool before conv2 (else after it)
};

// A residual block; forward_with_maps gives maps by path relative to the block
// ("se.attention", "conv1.attention").
class CVATTN_EXPORT ResidualBlock : public MappedModule {
 public:
  [[nodiscard]] const ResNetBlockOptions& options() const noexcept { return options_; }
  // Output channels: planes * expansion.
  [[nodiscard]] virtual std::int64_t out_channels() const = 0;

 protected:
  explicit ResidualBlock(const ResNetBlockOptions& options);
  // Registers "se" (after the convs, as timm) and "downsample" per the options.
  void register_attention(std::int64_t channels);
  void register_downsample(std::int64_t out_channels);
  // se(x) with its map under "se.<name>", then + shortcut(identity) and ReLU.
  [[nodiscard]] Attended finish(const Tensor& x, const Tensor& identity, bool keep_maps) const;

  ResNetBlockOptions options_;

 private:
  std::shared_ptr<SqueezeExcitation> se_;
  std::shared_ptr<Eca> eca_;
  std::shared_ptr<ResNetDownsample> downsample_;
};

class CVATTN_EXPORT BasicBlock final : public ResidualBlock {
 public:
  static constexpr std::int64_t kExpansion = 1;
  // ValueError unless cardinality == 1 and base_width == 64 (as timm asserts).
  explicit BasicBlock(const ResNetBlockOptions& options);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::int64_t out_channels() const override { return options_.planes(); }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;
  void on_weights_loaded() override;

 private:
  FoldedConvBn conv_bn1_, conv_bn2_;
};

class CVATTN_EXPORT Bottleneck final : public ResidualBlock {
 public:
  static constexpr std::int64_t kExpansion = 4;
  explicit Bottleneck(const ResNetBlockOptions& options);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::int64_t out_channels() const override { return options_.planes() * 4; }
  // floor(planes * base_width / 64) * cardinality.
  [[nodiscard]] std::int64_t width() const noexcept { return width_; }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;
  void on_weights_loaded() override;

 private:
  std::int64_t width_;
  FoldedConvBn conv_bn1_, conv_bn2_, conv_bn3_;
};

// timm's SelectiveKernelBasic (models/sknet.py).
class CVATTN_EXPORT SelectiveKernelBasic final : public ResidualBlock {
 public:
  static constexpr std::int64_t kExpansion = 1;
  explicit SelectiveKernelBasic(const ResNetBlockOptions& options);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::int64_t out_channels() const override { return options_.planes(); }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;

 private:
  std::shared_ptr<SelectiveKernel> conv1_;
  std::shared_ptr<ConvNormAct> conv2_;
};

// timm's SelectiveKernelBottleneck (models/sknet.py): conv1 = ConvNormAct 1x1 -> conv2 =
// SelectiveKernel(stride, groups=cardinality) -> conv3 = ConvNormAct 1x1 (no act) -> se -> ...
// Map "conv2.attention" [N, 2, width].
class CVATTN_EXPORT SelectiveKernelBottleneck final : public ResidualBlock {
 public:
  static constexpr std::int64_t kExpansion = 4;
  explicit SelectiveKernelBottleneck(const ResNetBlockOptions& options);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::int64_t out_channels() const override { return options_.planes() * 4; }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;

 private:
  std::shared_ptr<ConvNormAct> conv1_, conv3_;
  std::shared_ptr<SelectiveKernel> conv2_;
};

// timm's ResNestBottleneck (models/resnest.py): conv1 1x1 + bn1 + ReLU -> (avd_first pool) ->
// conv2 = SplitAttn(3x3, groups=cardinality, radix, BatchNorm) -> (avd_last pool) -> conv3 1x1 +
// bn3 -> + shortcut -> ReLU. With avd and stride > 1 the block strides by AvgPool2d(3, stride,
// padding 1) instead of the split-attention conv. Map "conv2.attention" [N, radix, width].
class CVATTN_EXPORT ResNestBottleneck final : public ResidualBlock {
 public:
  static constexpr std::int64_t kExpansion = 4;
  // ValueError unless reduce_first == 1 and attn_layer is none (as timm asserts).
  explicit ResNestBottleneck(const ResNetBlockOptions& options);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::int64_t out_channels() const override { return options_.planes() * 4; }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;
  void on_weights_loaded() override;

 private:
  std::int64_t avd_stride_ = 0;  // 0: no pool
  FoldedConvBn conv_bn1_, conv_bn3_;
  std::shared_ptr<SplitAttn> conv2_;
};

enum class ResNetBlock {
  basic,
  bottleneck,
  selective_kernel_basic,
  selective_kernel_bottleneck,
  resnest_bottleneck
};
enum class StemType { plain, deep, deep_tiered };  // timm's '', 'deep', 'deep_tiered'

class CVATTN_EXPORT ResNetOptions {
 public:
  ResNetOptions(ResNetBlock block, std::vector<std::int64_t> layers)
      : block_(block), layers_(std::move(layers)) {}
  CVATTN_ARG(ResNetBlock, block);
  CVATTN_ARG(std::vector<std::int64_t>, layers);  // blocks per stage
  CVATTN_ARG(std::string, model_name) = "resnet";
  CVATTN_ARG(std::int64_t, num_classes) = 1000;
  CVATTN_ARG(std::int64_t, in_chans) = 3;
  CVATTN_ARG(std::int64_t, cardinality) = 1;
  CVATTN_ARG(std::int64_t, base_width) = 64;
  CVATTN_ARG(std::int64_t, stem_width) = 64;
  CVATTN_ARG(StemType, stem_type) = StemType::plain;
  CVATTN_ARG(bool, avg_down) = false;
  CVATTN_ARG(std::vector<std::int64_t>, channels) = {64, 128, 256, 512};
  CVATTN_ARG(BlockAttention, attn_layer) = BlockAttention::none;
  CVATTN_ARG(double, sk_rd_ratio) = 1.0 / 16.0;
  CVATTN_ARG(std::int64_t, sk_rd_divisor) = 8;
  CVATTN_ARG(bool, sk_split_input) = true;
  CVATTN_ARG(std::int64_t, radix) = 2;  // ResNestBottleneck
  CVATTN_ARG(bool, avd) = false;
  CVATTN_ARG(bool, avd_first) = false;
};

class CVATTN_EXPORT ResNet final : public Network {
 public:
  // Weights start at zero (BatchNorms as PyTorch's fresh ones); load with load_state_dict.
  // ValueError on invalid options.
  explicit ResNet(const ResNetOptions& options);

  // x [N >= 1, in_chans, H >= 1, W >= 1]; ShapeError otherwise.
  [[nodiscard]] NetworkOutput run(const Tensor& x, bool keep_maps = true) const override;
  [[nodiscard]] const std::string& model_name() const override { return options_.model_name(); }
  [[nodiscard]] std::int64_t num_classes() const override { return options_.num_classes(); }
  [[nodiscard]] std::int64_t num_features() const override { return num_features_; }
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const ResNetOptions& options() const noexcept { return options_; }

 protected:
  [[nodiscard]] Tensor cam_weight() const override { return fc_->weight(); }
  void on_weights_loaded() override;

 private:
  ResNetOptions options_;
  std::int64_t num_features_ = 0;
  std::vector<FoldedConvBn> stem_;                  // the stem convs, the last one folded with bn1
  std::vector<std::shared_ptr<BlockList>> stages_;  // layer1..4
  std::shared_ptr<Linear> fc_;
};

}  // namespace cvattn::models

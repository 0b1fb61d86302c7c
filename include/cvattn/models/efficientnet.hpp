#pragma once
// timm's EfficientNet / MobileNetV3 family (models/efficientnet.py, models/mobilenetv3.py,
// models/_efficientnet_blocks.py, models/_efficientnet_builder.py): the blocks as reusable
// modules, timm's architecture strings and the two networks, with timm's state_dict keys.
//
//   stem     conv_stem 3x3 s2 (no bias), bn1 + act
//   blocks   blocks.<stage>.<block>, built from timm's arch strings ("ir_r2_k3_s2_e6_c24_se0.25");
//            only the first block of a stage strides
//   head     EfficientNet: conv_head 1x1 (no bias), bn2 + act -> global average pool -> features
//            -> classifier                                    (CAM available)
//            MobileNetV3: global average pool -> conv_head 1x1 with bias -> act -> flatten ->
//            features -> classifier                           (no CAM: a nonlinearity follows
//            the pooling)
//
// Blocks (timm's forward order; every BatchNorm is folded into the conv before it on load,
// except after a CondConv, whose kernel depends on the sample):
//   ConvBnAct ('cn'):               conv k x k -> bn1 + act [-> + shortcut with skip]
//   DepthwiseSeparableConv ('ds'):  conv_dw k x k depthwise s -> bn1 + act -> se -> conv_pw 1x1
//                                   -> bn2 (+ act for 'dsa') -> + shortcut
//   InvertedResidual ('ir'):        conv_pw 1x1 -> bn1 + act -> conv_dw k x k depthwise s ->
//                                   bn2 + act -> se -> conv_pwl 1x1 -> bn3 -> + shortcut
//   CondConvResidual ('ir..._cc<E>'): routing = sigmoid(routing_fn(mean_hw x)) [N, E], then the
//                                   InvertedResidual's convs as CondConv2d mixing E experts
// The shortcut is taken when stride is 1, the channels match and the block is not 'noskip'.
// SqueezeExcite (timm's EfficientNet SE, keys conv_reduce / conv_expand):
//   gate = gate_fn(conv_expand(act(conv_reduce(mean_hw x)))),  y = x * gate
//   EfficientNet: act = the block's act (SiLU), gate sigmoid, rd = round(in_chs * se_ratio)
//   MobileNetV3:  act = ReLU, gate hard_sigmoid, rd = make_divisible(mid_chs * se_ratio, 8)
//
// Maps by path relative to the block: "se.attention" [N, C] (the gate, as SEModule's in the
// ResNet family) and, in CondConvResidual, "routing.attention" [N, E]; the network prefixes
// "blocks.<stage>.<block>.".
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/models/network.hpp"
#include "cvattn/models/resnet.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/cond_conv.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/layer_kinds.hpp"
#include "cvattn/modules/linear.hpp"

namespace cvattn::models {

// timm's make_divisible(v, divisor, min_value=None, round_limit=0.9): the nearest multiple of
// divisor, at least divisor, never below 0.9 * v.
[[nodiscard]] CVATTN_EXPORT std::int64_t make_divisible(double v, std::int64_t divisor = 8);
// timm's round_channels(channels, multiplier, divisor): make_divisible(channels * multiplier).
[[nodiscard]] CVATTN_EXPORT std::int64_t round_channels(double channels, double multiplier = 1.0,
                                                        std::int64_t divisor = 8);

// The block types of timm's arch strings this family uses.
enum class MobileBlockType {
  conv_bn_act,          // 'cn'
  depthwise_separable,  // 'ds' ('dsa': pw_act)
  inverted_residual,    // 'ir' ('cc<E>': CondConvResidual)
};

// One decoded block of an arch string (timm's _decode_block_str), repeats not yet expanded.
struct CVATTN_EXPORT MobileBlockArgs {
  MobileBlockType type = MobileBlockType::inverted_residual;
  std::int64_t repeats = 1;      // r
  std::int64_t kernel_size = 3;  // k (dw_kernel_size; ConvBnAct's kernel_size)
  std::int64_t stride = 1;       // s
  double exp_ratio = 1.0;        // e ('ir' only)
  std::int64_t out_chs = 0;      // c (before round_channels)
  double se_ratio = 0.0;         // se (0: no SE)
  std::optional<ActLayer> act;   // n: 're' relu, 'r6' relu6, 'hs' hard_swish, 'sw' silu; else
                                 // the network's act
  bool noskip = false;           // 'noskip' ('dsa' implies it)
  bool skip = false;             // 'skip' (ConvBnAct's shortcut)
  bool pw_act = false;           // 'dsa'
  std::int64_t num_experts = 0;  // cc (CondConv experts; 0: plain InvertedResidual)
};

// "ir_r2_k3_s2_e6_c24_se0.25" -> args. ValueError naming the string on an unknown block type or
// option this family does not build (exp/pw kernels, s2d, group size), or a missing r/k/s/c.
[[nodiscard]] CVATTN_EXPORT MobileBlockArgs decode_block_string(const std::string& block);
// timm's decode_arch_def with depth_multiplier 1: one list per stage, repeats expanded.
[[nodiscard]] CVATTN_EXPORT std::vector<std::vector<MobileBlockArgs>> decode_arch_def(
    const std::vector<std::vector<std::string>>& arch_def);

// ---------------------------------------------------------------------------------------------
// Blocks

class CVATTN_EXPORT SqueezeExciteOptions {
 public:
  SqueezeExciteOptions(std::int64_t channels, std::int64_t rd_channels)
      : channels_(channels), rd_channels_(rd_channels) {}
  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(std::int64_t, rd_channels);
  CVATTN_ARG(ActLayer, act_layer) = ActLayer::relu;
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::sigmoid;
};

// timm's SqueezeExcite of _efficientnet_blocks.py: keys conv_reduce.{weight [R, C, 1, 1], bias
// [R]}, conv_expand.{weight [C, R, 1, 1], bias [C]}. Map "attention" [N, C].
class CVATTN_EXPORT SqueezeExcite final : public MappedModule {
 public:
  // ValueError unless channels and rd_channels are positive.
  explicit SqueezeExcite(const SqueezeExciteOptions& options);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const SqueezeExciteOptions& options() const noexcept { return options_; }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;

 private:
  SqueezeExciteOptions options_;
  Tensor reduce_weight_, reduce_bias_, expand_weight_, expand_bias_;
};

// The settings of one built block (what timm's EfficientNetBuilder passes to it).
class CVATTN_EXPORT MobileBlockOptions {
 public:
  MobileBlockOptions(std::int64_t in_chs, std::int64_t out_chs)
      : in_chs_(in_chs), out_chs_(out_chs) {}
  CVATTN_ARG(std::int64_t, in_chs);
  CVATTN_ARG(std::int64_t, out_chs);
  CVATTN_ARG(std::int64_t, kernel_size) = 3;
  CVATTN_ARG(std::int64_t, stride) = 1;
  CVATTN_ARG(double, exp_ratio) = 1.0;  // InvertedResidual: mid = make_divisible(in * exp_ratio)
  CVATTN_ARG(ActLayer, act_layer) = ActLayer::relu;
  CVATTN_ARG(bool, noskip) = false;
  CVATTN_ARG(bool, skip) = false;    // ConvBnAct only
  CVATTN_ARG(bool, pw_act) = false;  // DepthwiseSeparableConv only
  // The SE: rd channels (0: none), its act and gate.
  CVATTN_ARG(std::int64_t, se_channels) = 0;
  CVATTN_ARG(ActLayer, se_act_layer) = ActLayer::relu;
  CVATTN_ARG(GateLayer, se_gate_layer) = GateLayer::sigmoid;
  CVATTN_ARG(std::int64_t, num_experts) = 0;  // CondConvResidual only (>= 1 there)
};

// The common face of the blocks: the options and the output channels.
class CVATTN_EXPORT MobileBlock : public MappedModule {
 public:
  [[nodiscard]] const MobileBlockOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t out_channels() const noexcept { return options_.out_chs(); }
  [[nodiscard]] bool has_skip() const noexcept { return has_skip_; }

 protected:
  MobileBlock(const MobileBlockOptions& options, const char* kind, bool skip_allowed);
  // se(x) when the block has one, its map as "se.attention".
  [[nodiscard]] Tensor excite(const Tensor& x, bool keep_maps, AttentionMaps& maps) const;
  void register_se(std::int64_t channels);
  // y + shortcut when has_skip().
  [[nodiscard]] Tensor finish(const Tensor& y, const Tensor& shortcut) const;

  MobileBlockOptions options_;
  bool has_skip_ = false;

 private:
  std::shared_ptr<SqueezeExcite> se_;
};

// 'cn': keys conv.weight, bn1.*.
class CVATTN_EXPORT ConvBnAct final : public MobileBlock {
 public:
  explicit ConvBnAct(const MobileBlockOptions& options);
  [[nodiscard]] std::string describe() const override;

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;
  void on_weights_loaded() override;

 private:
  FoldedConvBn conv_bn_;
};

// 'ds' / 'dsa': keys conv_dw.weight, bn1.*, se.*, conv_pw.weight, bn2.*.
class CVATTN_EXPORT DepthwiseSeparableConv final : public MobileBlock {
 public:
  explicit DepthwiseSeparableConv(const MobileBlockOptions& options);
  [[nodiscard]] std::string describe() const override;

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;
  void on_weights_loaded() override;

 private:
  FoldedConvBn dw_, pw_;
};

// 'ir': keys conv_pw.weight, bn1.*, conv_dw.weight, bn2.*, se.*, conv_pwl.weight, bn3.*.
class CVATTN_EXPORT InvertedResidual final : public MobileBlock {
 public:
  explicit InvertedResidual(const MobileBlockOptions& options);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::int64_t mid_channels() const noexcept { return mid_; }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;
  void on_weights_loaded() override;

 private:
  std::int64_t mid_;
  FoldedConvBn pw_, dw_, pwl_;
};

// 'ir..._cc<E>': the InvertedResidual's keys with CondConv2d weights [E, ...] and
// routing_fn.{weight [E, in_chs], bias [E]}. Maps "routing.attention" [N, E], "se.attention".
class CVATTN_EXPORT CondConvResidual final : public MobileBlock {
 public:
  // ValueError unless num_experts >= 1.
  explicit CondConvResidual(const MobileBlockOptions& options);
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] std::int64_t mid_channels() const noexcept { return mid_; }

 protected:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const override;

 private:
  std::int64_t mid_;
  std::shared_ptr<CondConv2d> conv_pw_, conv_dw_, conv_pwl_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_, bn3_;
  std::shared_ptr<CondConvRouting> routing_;
};

// ---------------------------------------------------------------------------------------------
// Networks

enum class MobileHead {
  efficientnet,  // conv_head + bn2 + act, then pool -> classifier
  mobilenetv3,   // pool, then conv_head (bias) + act -> classifier
};

class CVATTN_EXPORT MobileNetOptions {
 public:
  explicit MobileNetOptions(std::vector<std::vector<std::string>> arch_def)
      : arch_def_(std::move(arch_def)) {}
  CVATTN_ARG(std::vector<std::vector<std::string>>, arch_def);  // timm's strings per stage
  CVATTN_ARG(std::string, model_name) = "efficientnet";
  CVATTN_ARG(MobileHead, head) = MobileHead::efficientnet;
  CVATTN_ARG(std::int64_t, num_classes) = 1000;
  CVATTN_ARG(std::int64_t, in_chans) = 3;
  CVATTN_ARG(std::int64_t, stem_size) = 32;       // before round_channels
  CVATTN_ARG(std::int64_t, num_features) = 1280;  // conv_head's channels (after rounding)
  CVATTN_ARG(double, channel_multiplier) = 1.0;
  CVATTN_ARG(ActLayer, act_layer) = ActLayer::silu;
  // SE: channels reduced from the expanded (mid) channels (MobileNetV3) or from the block's
  // input (EfficientNet: se_ratio / exp_ratio of mid); rounded by round_channels (MobileNetV3)
  // or Python's round (EfficientNet); the SE act is se_act_layer when set, else the block's.
  CVATTN_ARG(bool, se_from_exp) = false;
  CVATTN_ARG(bool, se_round_channels) = false;
  CVATTN_ARG(std::optional<ActLayer>, se_act_layer) = std::nullopt;
  CVATTN_ARG(GateLayer, se_gate_layer) = GateLayer::sigmoid;
};

// The stem and blocks both networks share; the head is the subclass's.
class CVATTN_EXPORT MobileNetBase : public Network {
 public:
  [[nodiscard]] const std::string& model_name() const override { return options_.model_name(); }
  [[nodiscard]] std::int64_t num_classes() const override { return options_.num_classes(); }
  // The width of `features` (timm's head_hidden_size; for MobileNetV3 that is conv_head's
  // width, while feature_map has timm's num_features = the last block's channels).
  [[nodiscard]] std::int64_t num_features() const override { return options_.num_features(); }
  [[nodiscard]] const MobileNetOptions& options() const noexcept { return options_; }
  // Channels of the last block's output.
  [[nodiscard]] std::int64_t trunk_channels() const noexcept { return trunk_channels_; }

 protected:
  explicit MobileNetBase(const MobileNetOptions& options);
  // x checked, then stem and blocks: the trunk's output, maps under "blocks.<i>.<j>.".
  [[nodiscard]] Tensor trunk(const Tensor& x, bool keep_maps, AttentionMaps& maps,
                             const char* where) const;
  void on_weights_loaded() override;

  MobileNetOptions options_;
  std::int64_t trunk_channels_ = 0;

 private:
  FoldedConvBn stem_;
  std::shared_ptr<BlockList> blocks_;  // of one BlockList per stage
};

// timm's EfficientNet (efficientnet_b0, efficientnet_cc_b0_4e).
class CVATTN_EXPORT EfficientNet final : public MobileNetBase {
 public:
  // Zero weights, fresh BatchNorms. ValueError on invalid options or arch strings.
  explicit EfficientNet(const MobileNetOptions& options);
  // x [N >= 1, in_chans, H >= 1, W >= 1]; ShapeError otherwise.
  [[nodiscard]] NetworkOutput run(const Tensor& x, bool keep_maps = true) const override;
  [[nodiscard]] std::string describe() const override;

 protected:
  [[nodiscard]] Tensor cam_weight() const override { return classifier_->weight(); }
  void on_weights_loaded() override;

 private:
  FoldedConvBn head_;
  std::shared_ptr<Linear> classifier_;
};

// timm's MobileNetV3 (mobilenetv3_small_100, mobilenetv3_large_100). feature_map is the last
// block's output [N, trunk_channels, h, w]; class_activation_map is a ValueError.
class CVATTN_EXPORT MobileNetV3 final : public MobileNetBase {
 public:
  explicit MobileNetV3(const MobileNetOptions& options);
  [[nodiscard]] NetworkOutput run(const Tensor& x, bool keep_maps = true) const override;
  [[nodiscard]] std::string describe() const override;

 private:
  std::shared_ptr<Conv2d> conv_head_;
  std::shared_ptr<Linear> classifier_;
};

}  // namespace cvattn::models

#include "cvattn/models/efficientnet.hpp"

#include <cfenv>
#include <cmath>
#include <sstream>
#include <utility>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/functional/linear.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/functional/residual.hpp"
#include "cvattn/functional/saliency.hpp"
#include "models/detail/maps.hpp"

namespace cvattn::models {

namespace F = cvattn::functional;

namespace {

// timm's '' padding: ((stride - 1) + dilation * (k - 1)) // 2.
std::int64_t same_padding(std::int64_t kernel, std::int64_t stride) {
  return ((stride - 1) + (kernel - 1)) / 2;
}

std::shared_ptr<Conv2d> make_conv(std::int64_t in, std::int64_t out, std::int64_t kernel,
                                  std::int64_t stride = 1, std::int64_t groups = 1,
                                  bool bias = false) {
  return std::make_shared<Conv2d>(Conv2dOptions(in, out, kernel)
                                      .stride(stride)
                                      .padding(same_padding(kernel, stride))
                                      .groups(groups)
                                      .bias(bias));
}

std::shared_ptr<BatchNorm2d> make_bn(std::int64_t channels) {
  return std::make_shared<BatchNorm2d>(BatchNorm2dOptions(channels));
}

// bn(conv(x)) folded, the activation fused into the conv.
Tensor conv_bn_act(const FoldedConvBn& conv_bn, const Tensor& x, ActLayer act) {
  return conv_bn(x, act);
}

bool is_integer(const std::string& s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::int64_t block_integer(const std::string& block, const std::string& key,
                           const std::string& value) {
  CVATTN_CHECK(is_integer(value) && value.size() < 10, ValueError, "decode_block_string('", block,
               "'): option '", key, "' expects an integer, got '", value, "'");
  return std::stoll(value);
}

double block_real(const std::string& block, const std::string& key, const std::string& value) {
  std::size_t used = 0;
  double v = 0.0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  CVATTN_CHECK(used == value.size() && std::isfinite(v) && v >= 0.0, ValueError,
               "decode_block_string('", block, "'): option '", key,
               "' expects a non-negative number, got '", value, "'");
  return v;
}

// Python's round() of a non-negative double: to nearest, ties to even.
std::int64_t python_round(double v) {
  const int mode = std::fegetround();
  std::fesetround(FE_TONEAREST);
  const double r = std::nearbyint(v);
  std::fesetround(mode);
  return static_cast<std::int64_t>(r);
}

}  // namespace

std::int64_t make_divisible(double v, std::int64_t divisor) {
  CVATTN_CHECK(divisor >= 1 && std::isfinite(v) && v >= 0.0 && v < 1e15, ValueError,
               "make_divisible: v (", v, ") must be finite and non-negative, divisor (", divisor,
               ") positive");
  const auto d = static_cast<double>(divisor);
  std::int64_t out = static_cast<std::int64_t>(v + d / 2.0) / divisor * divisor;
  if (out < divisor) out = divisor;
  if (static_cast<double>(out) < 0.9 * v) out += divisor;
  return out;
}

std::int64_t round_channels(double channels, double multiplier, std::int64_t divisor) {
  if (multiplier == 0.0) return static_cast<std::int64_t>(channels);
  return make_divisible(channels * multiplier, divisor);
}

MobileBlockArgs decode_block_string(const std::string& block) {
  std::vector<std::string> ops;
  std::string cur;
  for (const char c : block) {
    if (c == '_') {
      ops.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  ops.push_back(cur);
  MobileBlockArgs a;
  const std::string& type = ops[0];
  if (type == "ir") {
    a.type = MobileBlockType::inverted_residual;
  } else if (type == "ds" || type == "dsa") {
    a.type = MobileBlockType::depthwise_separable;
    a.pw_act = type == "dsa";
  } else if (type == "cn") {
    a.type = MobileBlockType::conv_bn_act;
  } else {
    throw ValueError("decode_block_string('" + block + "'): block type '" + type +
                     "' is not built (expected ir, ds, dsa or cn)");
  }
  bool has_r = false, has_k = false, has_s = false, has_c = false, force_skip = false;
  for (std::size_t i = 1; i < ops.size(); ++i) {
    const std::string& op = ops[i];
    if (op == "noskip") {
      a.noskip = true;
      continue;
    }
    if (op == "skip") {
      force_skip = true;
      continue;
    }
    if (!op.empty() && op[0] == 'n') {  // timm ignores unknown activation words
      const std::string v = op.substr(1);
      if (v == "re") a.act = ActLayer::relu;
      if (v == "r6") a.act = ActLayer::relu6;
      if (v == "hs") a.act = ActLayer::hard_swish;
      if (v == "sw") a.act = ActLayer::silu;
      if (v == "mi") a.act = ActLayer::mish;
      continue;
    }
    const std::size_t digit = op.find_first_of("0123456789");
    if (digit == std::string::npos) continue;  // as timm: no value, no option
    const std::string key = op.substr(0, digit), value = op.substr(digit);
    if (key == "r") {
      a.repeats = block_integer(block, key, value);
      has_r = true;
    } else if (key == "k") {
      a.kernel_size = block_integer(block, key, value);
      has_k = true;
    } else if (key == "s") {
      a.stride = block_integer(block, key, value);
      has_s = true;
    } else if (key == "c") {
      a.out_chs = block_integer(block, key, value);
      has_c = true;
    } else if (key == "e") {
      a.exp_ratio = block_real(block, key, value);
    } else if (key == "se") {
      a.se_ratio = block_real(block, key, value);
    } else if (key == "cc") {
      a.num_experts = block_integer(block, key, value);
    } else {
      throw ValueError("decode_block_string('" + block + "'): option '" + key +
                       "' is not built by this family (expected r, k, s, e, c, se, cc, n, skip, "
                       "noskip)");
    }
  }
  CVATTN_CHECK(has_r && has_k && has_s && has_c, ValueError, "decode_block_string('", block,
               "'): r, k, s and c are required");
  CVATTN_CHECK(
      a.repeats >= 1 && a.kernel_size >= 1 && (a.stride == 1 || a.stride == 2) && a.out_chs >= 1,
      ValueError, "decode_block_string('", block, "'): r, k and c must be positive and s 1 or 2");
  CVATTN_CHECK(a.num_experts == 0 || a.type == MobileBlockType::inverted_residual, ValueError,
               "decode_block_string('", block, "'): cc (CondConv experts) only on 'ir' blocks");
  if (a.type == MobileBlockType::conv_bn_act) {
    a.skip = force_skip;
    a.noskip = false;
  }
  if (a.pw_act) a.noskip = true;  // timm: 'dsa' never has a shortcut
  return a;
}

std::vector<std::vector<MobileBlockArgs>> decode_arch_def(
    const std::vector<std::vector<std::string>>& arch_def) {
  std::vector<std::vector<MobileBlockArgs>> stages;
  for (const auto& stage : arch_def) {
    std::vector<MobileBlockArgs> blocks;
    for (const std::string& s : stage) {
      const MobileBlockArgs a = decode_block_string(s);
      for (std::int64_t r = 0; r < a.repeats; ++r) blocks.push_back(a);
    }
    stages.push_back(std::move(blocks));
  }
  return stages;
}

// ---------------------------------------------------------------------------------------------
// SqueezeExcite

SqueezeExcite::SqueezeExcite(const SqueezeExciteOptions& options) : options_(options) {
  const std::int64_t c = options_.channels(), r = options_.rd_channels();
  CVATTN_CHECK(c >= 1 && r >= 1, ValueError, "SqueezeExcite: channels (", c, ") and rd_channels (",
               r, ") must be positive");
  reduce_weight_ = register_parameter("conv_reduce.weight", {r, c, 1, 1});
  reduce_bias_ = register_parameter("conv_reduce.bias", {r});
  expand_weight_ = register_parameter("conv_expand.weight", {c, r, 1, 1});
  expand_bias_ = register_parameter("conv_expand.bias", {c});
}

Attended SqueezeExcite::run(const Tensor& x, bool keep_maps) const {
  const char* where = "SqueezeExcite::forward";
  check_defined(x, "x", where);
  check_shape(x, {kAny, options_.channels(), kAny, kAny}, "x", where);
  CVATTN_CHECK(x.dim(2) >= 1 && x.dim(3) >= 1, ShapeError, where,
               ": tensor 'x' needs H, W >= 1 (the gate averages over them), got ",
               cvattn::to_string(x.shape()));
  const std::int64_t c = options_.channels(), r = options_.rd_channels();
  const Tensor pooled = F::channel_pool(x);  // [N, C]
  const Tensor hidden = F::activation(
      F::linear(pooled, reduce_weight_.reshape({r, c}), reduce_bias_), options_.act_layer());
  const Tensor gate = F::gate(F::linear(hidden, expand_weight_.reshape({c, r}), expand_bias_),
                              options_.gate_layer());
  Attended out{F::scale_channels(x, gate), {}};
  if (keep_maps) out.maps.add("attention", gate);
  return out;
}

std::string SqueezeExcite::describe() const {
  return "SqueezeExcite(channels=" + std::to_string(options_.channels()) +
         ", rd_channels=" + std::to_string(options_.rd_channels()) +
         ", act_layer=" + to_string(options_.act_layer()) +
         ", gate_layer=" + to_string(options_.gate_layer()) + ")";
}

// ---------------------------------------------------------------------------------------------
// Blocks

MobileBlock::MobileBlock(const MobileBlockOptions& options, const char* kind, bool skip_allowed)
    : options_(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.in_chs() >= 1 && o.out_chs() >= 1 && o.kernel_size() >= 1 && o.stride() >= 1 &&
                   o.exp_ratio() > 0.0 && o.se_channels() >= 0 && o.num_experts() >= 0,
               ValueError, kind, ": in_chs (", o.in_chs(), "), out_chs (", o.out_chs(),
               "), kernel_size (", o.kernel_size(), "), stride (", o.stride(), ") and exp_ratio (",
               o.exp_ratio(), ") must be positive, se_channels (", o.se_channels(),
               ") and num_experts (", o.num_experts(), ") non-negative");
  has_skip_ = skip_allowed && o.stride() == 1 && o.in_chs() == o.out_chs();
}

void MobileBlock::register_se(std::int64_t channels) {
  if (options_.se_channels() == 0) return;
  se_ = register_module(
      "se", std::make_shared<SqueezeExcite>(SqueezeExciteOptions(channels, options_.se_channels())
                                                .act_layer(options_.se_act_layer())
                                                .gate_layer(options_.se_gate_layer())));
}

Tensor MobileBlock::excite(const Tensor& x, bool keep_maps, AttentionMaps& maps) const {
  if (!se_) return x;
  if (!keep_maps) return se_->forward(x);
  Attended a = se_->forward_with_maps(x);
  detail::add_prefixed(maps, "se", a.maps);
  return a.output;
}

Tensor MobileBlock::finish(const Tensor& y, const Tensor& shortcut) const {
  return has_skip_ ? F::residual_add(y, shortcut, false) : y;
}

ConvBnAct::ConvBnAct(const MobileBlockOptions& options)
    : MobileBlock(options, "ConvBnAct", options.skip()) {
  const auto& o = options_;
  auto c = register_module("conv", make_conv(o.in_chs(), o.out_chs(), o.kernel_size(), o.stride()));
  conv_bn_ = FoldedConvBn(c, register_module("bn1", make_bn(o.out_chs())));
}

void ConvBnAct::on_weights_loaded() { conv_bn_.fold(); }

Attended ConvBnAct::run(const Tensor& x, bool /*keep_maps*/) const {
  return {finish(conv_bn_act(conv_bn_, x, options_.act_layer()), x), {}};
}

std::string ConvBnAct::describe() const {
  const auto& o = options_;
  return "ConvBnAct(in_chs=" + std::to_string(o.in_chs()) +
         ", out_chs=" + std::to_string(o.out_chs()) +
         ", kernel_size=" + std::to_string(o.kernel_size()) +
         ", stride=" + std::to_string(o.stride()) + ", act_layer=" + to_string(o.act_layer()) + ")";
}

DepthwiseSeparableConv::DepthwiseSeparableConv(const MobileBlockOptions& options)
    : MobileBlock(options, "DepthwiseSeparableConv", !options.noskip() && !options.pw_act()) {
  const auto& o = options_;
  const std::int64_t c = o.in_chs();
  auto dw = register_module("conv_dw", make_conv(c, c, o.kernel_size(), o.stride(), c));
  dw_ = FoldedConvBn(dw, register_module("bn1", make_bn(c)));
  register_se(c);
  auto pw = register_module("conv_pw", make_conv(c, o.out_chs(), 1));
  pw_ = FoldedConvBn(pw, register_module("bn2", make_bn(o.out_chs())));
}

void DepthwiseSeparableConv::on_weights_loaded() {
  dw_.fold();
  pw_.fold();
}

Attended DepthwiseSeparableConv::run(const Tensor& x, bool keep_maps) const {
  Attended out;
  Tensor y = conv_bn_act(dw_, x, options_.act_layer());
  y = excite(y, keep_maps, out.maps);
  y = options_.pw_act() ? conv_bn_act(pw_, y, options_.act_layer()) : pw_(y, false);
  out.output = finish(y, x);
  return out;
}

std::string DepthwiseSeparableConv::describe() const {
  const auto& o = options_;
  return "DepthwiseSeparableConv(in_chs=" + std::to_string(o.in_chs()) +
         ", out_chs=" + std::to_string(o.out_chs()) +
         ", dw_kernel_size=" + std::to_string(o.kernel_size()) +
         ", stride=" + std::to_string(o.stride()) + ", act_layer=" + to_string(o.act_layer()) +
         ", se_channels=" + std::to_string(o.se_channels()) + ")";
}

InvertedResidual::InvertedResidual(const MobileBlockOptions& options)
    : MobileBlock(options, "InvertedResidual", !options.noskip()),
      mid_(make_divisible(static_cast<double>(options.in_chs()) * options.exp_ratio())) {
  const auto& o = options_;
  auto pw = register_module("conv_pw", make_conv(o.in_chs(), mid_, 1));
  pw_ = FoldedConvBn(pw, register_module("bn1", make_bn(mid_)));
  auto dw = register_module("conv_dw", make_conv(mid_, mid_, o.kernel_size(), o.stride(), mid_));
  dw_ = FoldedConvBn(dw, register_module("bn2", make_bn(mid_)));
  register_se(mid_);
  auto pwl = register_module("conv_pwl", make_conv(mid_, o.out_chs(), 1));
  pwl_ = FoldedConvBn(pwl, register_module("bn3", make_bn(o.out_chs())));
}

void InvertedResidual::on_weights_loaded() {
  pw_.fold();
  dw_.fold();
  pwl_.fold();
}

Attended InvertedResidual::run(const Tensor& x, bool keep_maps) const {
  Attended out;
  const ActLayer act = options_.act_layer();
  Tensor y = conv_bn_act(dw_, conv_bn_act(pw_, x, act), act);
  y = excite(y, keep_maps, out.maps);
  out.output = finish(pwl_(y, false), x);
  return out;
}

std::string InvertedResidual::describe() const {
  const auto& o = options_;
  return "InvertedResidual(in_chs=" + std::to_string(o.in_chs()) +
         ", mid_chs=" + std::to_string(mid_) + ", out_chs=" + std::to_string(o.out_chs()) +
         ", dw_kernel_size=" + std::to_string(o.kernel_size()) +
         ", stride=" + std::to_string(o.stride()) + ", act_layer=" + to_string(o.act_layer()) +
         ", se_channels=" + std::to_string(o.se_channels()) + ")";
}

CondConvResidual::CondConvResidual(const MobileBlockOptions& options)
    : MobileBlock(options, "CondConvResidual", !options.noskip()),
      mid_(make_divisible(static_cast<double>(options.in_chs()) * options.exp_ratio())) {
  const auto& o = options_;
  const std::int64_t e = o.num_experts();
  CVATTN_CHECK(e >= 1, ValueError, "CondConvResidual: num_experts must be >= 1, got ", e);
  auto cond = [e](std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                  std::int64_t groups) {
    return std::make_shared<CondConv2d>(
        CondConv2dOptions(in, out, Pair2(k)).stride(Pair2(stride)).groups(groups).num_experts(e));
  };
  conv_pw_ = register_module("conv_pw", cond(o.in_chs(), mid_, 1, 1, 1));
  bn1_ = register_module("bn1", make_bn(mid_));
  conv_dw_ = register_module("conv_dw", cond(mid_, mid_, o.kernel_size(), o.stride(), mid_));
  bn2_ = register_module("bn2", make_bn(mid_));
  register_se(mid_);
  conv_pwl_ = register_module("conv_pwl", cond(mid_, o.out_chs(), 1, 1, 1));
  bn3_ = register_module("bn3", make_bn(o.out_chs()));
  routing_ = register_module(
      "routing_fn", std::make_shared<CondConvRouting>(CondConvRoutingOptions(o.in_chs(), e)));
}

Attended CondConvResidual::run(const Tensor& x, bool keep_maps) const {
  Attended out;
  const ActLayer act = options_.act_layer();
  const Tensor routing = routing_->forward(x);  // [N, E]
  if (keep_maps) out.maps.add("routing.attention", routing);
  // bn outputs are fresh tensors: activated in place.
  Tensor y = bn1_->forward(conv_pw_->forward(x, routing));
  F::activation_(y, act);
  y = bn2_->forward(conv_dw_->forward(y, routing));
  F::activation_(y, act);
  y = excite(y, keep_maps, out.maps);
  y = bn3_->forward(conv_pwl_->forward(y, routing));
  out.output = finish(y, x);
  return out;
}

std::string CondConvResidual::describe() const {
  const auto& o = options_;
  return "CondConvResidual(in_chs=" + std::to_string(o.in_chs()) +
         ", mid_chs=" + std::to_string(mid_) + ", out_chs=" + std::to_string(o.out_chs()) +
         ", dw_kernel_size=" + std::to_string(o.kernel_size()) +
         ", stride=" + std::to_string(o.stride()) +
         ", num_experts=" + std::to_string(o.num_experts()) + ")";
}

// ---------------------------------------------------------------------------------------------
// Networks

MobileNetBase::MobileNetBase(const MobileNetOptions& options) : options_(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.num_classes() >= 1 && o.in_chans() >= 1 && o.stem_size() >= 1 &&
                   o.num_features() >= 1 && o.channel_multiplier() > 0.0 && !o.arch_def().empty(),
               ValueError, "MobileNetOptions: num_classes (", o.num_classes(), "), in_chans (",
               o.in_chans(), "), stem_size (", o.stem_size(), "), num_features (", o.num_features(),
               ") and channel_multiplier (", o.channel_multiplier(),
               ") must be positive and arch_def non-empty");
  const auto stages = decode_arch_def(o.arch_def());
  // timm: fix_stem = channel_multiplier < 0.75 (MobileNetV3); EfficientNet always rounds.
  const std::int64_t stem =
      round_channels(static_cast<double>(o.stem_size()), o.channel_multiplier());
  auto c = register_module("conv_stem", make_conv(o.in_chans(), stem, 3, 2));
  stem_ = FoldedConvBn(c, register_module("bn1", make_bn(stem)));

  blocks_ = register_module("blocks", std::make_shared<BlockList>());
  std::int64_t in_chs = stem;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    CVATTN_CHECK(!stages[s].empty(), ValueError, "MobileNetOptions: stage ", s, " has no blocks");
    auto stage = std::make_shared<BlockList>();
    for (std::size_t i = 0; i < stages[s].size(); ++i) {
      const MobileBlockArgs& a = stages[s][i];
      const std::int64_t out_chs =
          round_channels(static_cast<double>(a.out_chs), o.channel_multiplier());
      const ActLayer act = a.act.value_or(o.act_layer());
      MobileBlockOptions bo = MobileBlockOptions(in_chs, out_chs)
                                  .kernel_size(a.kernel_size)
                                  .stride(i == 0 ? a.stride : 1)
                                  .exp_ratio(a.exp_ratio)
                                  .act_layer(act)
                                  .noskip(a.noskip)
                                  .skip(a.skip)
                                  .pw_act(a.pw_act)
                                  .num_experts(a.num_experts);
      if (a.se_ratio > 0.0 && a.type != MobileBlockType::conv_bn_act) {
        // timm's EfficientNetBuilder._make_block and SqueezeExcite.__init__.
        const bool ir = a.type == MobileBlockType::inverted_residual;
        const double exp_ratio = ir ? a.exp_ratio : 1.0;
        const double ratio = o.se_from_exp() ? a.se_ratio : a.se_ratio / exp_ratio;
        const std::int64_t se_in =
            ir ? make_divisible(static_cast<double>(in_chs) * a.exp_ratio) : in_chs;
        const double v = static_cast<double>(se_in) * ratio;
        bo.se_channels(o.se_round_channels() ? round_channels(v) : python_round(v))
            .se_act_layer(o.se_act_layer().value_or(act))
            .se_gate_layer(o.se_gate_layer());
        CVATTN_CHECK(bo.se_channels() >= 1, ValueError, "MobileNetOptions: block '",
                     o.arch_def()[s].front(), "' reduces its SE to 0 channels");
      }
      std::shared_ptr<MobileBlock> block;
      switch (a.type) {
        case MobileBlockType::conv_bn_act:
          block = std::make_shared<ConvBnAct>(bo);
          break;
        case MobileBlockType::depthwise_separable:
          block = std::make_shared<DepthwiseSeparableConv>(bo);
          break;
        case MobileBlockType::inverted_residual:
          if (a.num_experts > 0) {
            block = std::make_shared<CondConvResidual>(bo);
          } else {
            block = std::make_shared<InvertedResidual>(bo);
          }
          break;
      }
      stage->push_back(block);
      in_chs = out_chs;
    }
    blocks_->push_back(stage);
  }
  trunk_channels_ = in_chs;
}

void MobileNetBase::on_weights_loaded() { stem_.fold(); }

Tensor MobileNetBase::trunk(const Tensor& x, bool keep_maps, AttentionMaps& maps,
                            const char* where) const {
  check_defined(x, "x", where);
  check_shape(x, {kAny, options_.in_chans(), kAny, kAny}, "x", where);
  CVATTN_CHECK(x.dim(0) >= 1 && x.dim(2) >= 1 && x.dim(3) >= 1, ShapeError, where,
               ": tensor 'x' expected [N >= 1, ", options_.in_chans(), ", H >= 1, W >= 1], got ",
               cvattn::to_string(x.shape()));
  Tensor y = conv_bn_act(stem_, x, options_.act_layer());
  if (!keep_maps) return blocks_->forward(y);
  Attended a = blocks_->forward_with_maps(y);
  detail::add_prefixed(maps, "blocks", a.maps);
  return a.output;
}

EfficientNet::EfficientNet(const MobileNetOptions& options) : MobileNetBase(options) {
  const std::int64_t nf = options_.num_features();
  auto c = register_module("conv_head", make_conv(trunk_channels_, nf, 1));
  head_ = FoldedConvBn(c, register_module("bn2", make_bn(nf)));
  classifier_ = register_module(
      "classifier", std::make_shared<Linear>(LinearOptions(nf, options_.num_classes())));
}

void EfficientNet::on_weights_loaded() {
  MobileNetBase::on_weights_loaded();
  head_.fold();
}

NetworkOutput EfficientNet::run(const Tensor& x, bool keep_maps) const {
  NetworkOutput out;
  const Tensor y = trunk(x, keep_maps, out.maps, "EfficientNet::forward");
  out.feature_map = conv_bn_act(head_, y, options_.act_layer());
  const Tensor& f = out.feature_map;
  out.features = F::global_avg_pool2d(f).reshape({f.dim(0), f.dim(1)});
  out.logits = classifier_->forward(out.features);
  return out;
}

std::string EfficientNet::describe() const {
  std::ostringstream s;
  s << "EfficientNet(model_name=" << options_.model_name()
    << ", num_classes=" << options_.num_classes() << ", num_features=" << options_.num_features()
    << ")";
  return s.str();
}

MobileNetV3::MobileNetV3(const MobileNetOptions& options) : MobileNetBase(options) {
  const std::int64_t nf = options_.num_features();
  conv_head_ = register_module("conv_head", make_conv(trunk_channels_, nf, 1, 1, 1, true));
  classifier_ = register_module(
      "classifier", std::make_shared<Linear>(LinearOptions(nf, options_.num_classes())));
}

NetworkOutput MobileNetV3::run(const Tensor& x, bool keep_maps) const {
  NetworkOutput out;
  out.feature_map = trunk(x, keep_maps, out.maps, "MobileNetV3::forward");
  const Tensor pooled = F::global_avg_pool2d(out.feature_map);  // [N, C, 1, 1]
  const Tensor head = F::activation(conv_head_->forward(pooled), options_.act_layer());
  out.features = head.reshape({head.dim(0), head.dim(1)});
  out.logits = classifier_->forward(out.features);
  return out;
}

std::string MobileNetV3::describe() const {
  std::ostringstream s;
  s << "MobileNetV3(model_name=" << options_.model_name()
    << ", num_classes=" << options_.num_classes() << ", num_features=" << options_.num_features()
    << ")";
  return s.str();
}

}  // namespace cvattn::models

#include "cvattn/models/byobnet.hpp"

#include <algorithm>
#include <sstream>
#include <utility>

#include "cvattn/core/error.hpp"
#include "cvattn/core/make_divisible.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/functional/residual.hpp"
#include "cvattn/functional/saliency.hpp"
#include "cvattn/modules/bottleneck_attn.hpp"
#include "cvattn/modules/halo_attn.hpp"
#include "cvattn/modules/lambda_layer.hpp"
#include "models/detail/maps.hpp"

namespace cvattn::models {

namespace F = cvattn::functional;

namespace {

const char* to_string(SelfAttnLayer layer) {
  switch (layer) {
    case SelfAttnLayer::halo:
      return "halo";
    case SelfAttnLayer::lambda:
      return "lambda";
    case SelfAttnLayer::bottleneck:
      break;
  }
  return "bottleneck";
}

std::shared_ptr<ConvNormAct> conv_norm_act(std::int64_t in, std::int64_t out, std::int64_t k,
                                           std::int64_t stride = 1, bool act = true,
                                           std::int64_t groups = 1) {
  return std::make_shared<ConvNormAct>(
      ConvNormActOptions(in, out, k).stride(stride).groups(groups).apply_act(act));
}

// timm's DownsampleAvg: AvgPool2d(2, stride, ceil_mode, count_include_pad=False) when
// strided, then ConvNormAct 1x1 without activation (keys conv.conv, conv.bn).
class DownsampleAvg final : public UnaryModule {
 public:
  DownsampleAvg(std::int64_t in, std::int64_t out, std::int64_t stride) : stride_(stride) {
    conv_ = register_module("conv", conv_norm_act(in, out, 1, 1, false));
  }
  [[nodiscard]] Tensor forward(const Tensor& x) const override {
    if (stride_ == 1) return conv_->forward(x);
    return conv_->forward(F::avg_pool2d(
        x, F::AvgPool2dOptions(2).stride(stride_).ceil_mode(true).count_include_pad(false)));
  }
  [[nodiscard]] std::string describe() const override {
    return "DownsampleAvg(stride=" + std::to_string(stride_) + ")";
  }

 private:
  std::int64_t stride_;
  std::shared_ptr<ConvNormAct> conv_;
};

// ByobNet's "head": timm's ClassifierHead holding fc (global pooling has no weights).
class ClassifierHeadKeys final : public Module {
 public:
  ClassifierHeadKeys(std::int64_t features, std::int64_t classes) {
    fc = register_module("fc", std::make_shared<Linear>(LinearOptions(features, classes)));
  }
  [[nodiscard]] std::string describe() const override { return "ClassifierHead(pool=avg)"; }
  std::shared_ptr<Linear> fc;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Stem

TieredStem::TieredStem(std::int64_t in_channels, std::int64_t out_channels)
    : out_channels_(out_channels) {
  CVATTN_CHECK(in_channels >= 1 && out_channels >= 8, ValueError, "TieredStem: in_channels (",
               in_channels, ") must be positive and out_channels (", out_channels, ") at least 8");
  const std::int64_t c1 = 3 * out_channels / 8, c2 = out_channels / 2;
  conv1_ = register_module("conv1", conv_norm_act(in_channels, c1, 3, 2));
  conv2_ = register_module("conv2", conv_norm_act(c1, c2, 3));
  conv3_ = register_module("conv3", conv_norm_act(c2, out_channels, 3));
}

Tensor TieredStem::forward(const Tensor& x) const {
  const Tensor y = conv3_->forward(conv2_->forward(conv1_->forward(x)));
  return F::max_pool2d(y, F::MaxPool2dOptions(3).stride(2).padding(1));
}

std::string TieredStem::describe() const {
  return "TieredStem(out_channels=" + std::to_string(out_channels_) + ", pool=maxpool)";
}

// ---------------------------------------------------------------------------------------------
// Blocks

ByobBlock::ByobBlock(const ByobBlockOptions& options) : options_(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.in_channels() >= 1 && o.out_channels() >= 1 && o.stride() >= 1 &&
                   o.bottle_ratio() > 0.0 && o.group_size() >= 0,
               ValueError, "ByobBlockOptions: in_channels (", o.in_channels(), "), out_channels (",
               o.out_channels(), "), stride (", o.stride(), ") and bottle_ratio (",
               o.bottle_ratio(), ") must be positive and group_size (", o.group_size(),
               ") non-negative");
  mid_ = make_divisible(static_cast<double>(o.out_channels()) * o.bottle_ratio());
}

void ByobBlock::register_shortcut() {
  const auto& o = options_;
  if (o.in_channels() == o.out_channels() && o.stride() == 1) return;  // identity
  if (o.downsample() == ByobDownsample::avg) {
    shortcut_ = register_module(
        "shortcut", std::make_shared<DownsampleAvg>(o.in_channels(), o.out_channels(), o.stride()));
  } else {
    shortcut_ = register_module(
        "shortcut", conv_norm_act(o.in_channels(), o.out_channels(), 1, o.stride(), false));
  }
}

Tensor ByobBlock::finish(const Tensor& y, const Tensor& identity) const {
  const Tensor shortcut = shortcut_ ? shortcut_->forward(identity) : identity;
  CVATTN_CHECK(shortcut.shape() == y.shape(), ShapeError, describe(), ": the shortcut ",
               cvattn::to_string(shortcut.shape()), " does not match the residual ",
               cvattn::to_string(y.shape()), " (an odd map at a stride-2 block: timm fails too)");
  return F::residual_add(y, shortcut, true);
}

BottleneckBlock::BottleneckBlock(const ByobBlockOptions& options) : ByobBlock(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.group_size() == 0 || mid_ % o.group_size() == 0, ValueError,
               "BottleneckBlock: mid channels (", mid_, ") not divisible by group_size (",
               o.group_size(), ")");
  const std::int64_t groups = o.group_size() == 0 ? 1 : mid_ / o.group_size();
  register_shortcut();
  conv1_ = register_module("conv1_1x1", conv_norm_act(o.in_channels(), mid_, 1));
  conv2_ = register_module("conv2_kxk", conv_norm_act(mid_, mid_, 3, o.stride(), true, groups));
  conv3_ = register_module("conv3_1x1", conv_norm_act(mid_, o.out_channels(), 1, 1, false));
}

Attended BottleneckBlock::run(const Tensor& x, bool /*keep_maps*/) const {
  const Tensor y = conv3_->forward(conv2_->forward(conv1_->forward(x)));
  return {finish(y, x), {}};
}

std::string BottleneckBlock::describe() const {
  const auto& o = options_;
  return "BottleneckBlock(in_chs=" + std::to_string(o.in_channels()) +
         ", out_chs=" + std::to_string(o.out_channels()) + ", mid_chs=" + std::to_string(mid_) +
         ", stride=" + std::to_string(o.stride()) + ")";
}

SelfAttnBlock::SelfAttnBlock(const ByobBlockOptions& options) : ByobBlock(options) {
  const auto& o = options_;
  const SelfAttnConfig& a = o.self_attn();
  register_shortcut();
  conv1_ = register_module("conv1_1x1", conv_norm_act(o.in_channels(), mid_, 1));
  switch (a.layer) {
    case SelfAttnLayer::bottleneck:
      CVATTN_CHECK(o.feat_size().h >= 1 && o.feat_size().w >= 1, ValueError,
                   "SelfAttnBlock: BottleneckAttn needs feat_size (timm's img_size), got ",
                   o.feat_size().h, "x", o.feat_size().w);
      self_attn_ = register_module(
          "self_attn", std::make_shared<BottleneckAttn>(
                           BottleneckAttnOptions(mid_, o.feat_size()).stride(o.stride())));
      break;
    case SelfAttnLayer::halo:
      self_attn_ =
          register_module("self_attn", std::make_shared<HaloAttn>(HaloAttnOptions(mid_)
                                                                      .stride(o.stride())
                                                                      .block_size(a.block_size)
                                                                      .halo_size(a.halo_size)));
      break;
    case SelfAttnLayer::lambda: {
      LambdaLayerOptions lo = LambdaLayerOptions(mid_).stride(o.stride()).r(a.r);
      if (a.r == 0) lo.feat_size(o.feat_size());
      self_attn_ = register_module("self_attn", std::make_shared<LambdaLayer>(lo));
      break;
    }
  }
  post_attn_ =
      register_module("post_attn", std::make_shared<BatchNorm2d>(BatchNorm2dOptions(mid_)));
  conv3_ = register_module("conv3_1x1", conv_norm_act(mid_, o.out_channels(), 1, 1, false));
}

Attended SelfAttnBlock::run(const Tensor& x, bool keep_maps) const {
  const Tensor y = conv1_->forward(x);
  Attended a = keep_maps ? self_attn_->forward_with_maps(y) : Attended{self_attn_->forward(y), {}};
  const Tensor z = conv3_->forward(F::relu(post_attn_->forward(a.output)));
  Attended out{finish(z, x), {}};
  if (keep_maps) detail::add_prefixed(out.maps, "self_attn", a.maps);
  return out;
}

std::string SelfAttnBlock::describe() const {
  const auto& o = options_;
  return "SelfAttnBlock(in_chs=" + std::to_string(o.in_channels()) +
         ", out_chs=" + std::to_string(o.out_channels()) + ", mid_chs=" + std::to_string(mid_) +
         ", stride=" + std::to_string(o.stride()) +
         ", self_attn=" + to_string(o.self_attn().layer) + ")";
}

// ---------------------------------------------------------------------------------------------
// Configurations and network

ByobNetOptions byoanet_options(const std::string& model_name) {
  using T = ByobBlockType;
  // The ResNet-26-T layout shared by the three (model_cfgs of byoanet.py): stage 3 interleaves
  // ('bottle', 'self_attn'), stage 4 is all self-attention; bottle ratio 0.25, group size 0.
  const std::vector<ByobStage> stages = {
      {{T::bottle, T::bottle}, 256, 1, 0.25},
      {{T::bottle, T::bottle}, 512, 2, 0.25},
      {{T::bottle, T::self_attn}, 1024, 2, 0.25},
      {{T::self_attn, T::self_attn}, 2048, 2, 0.25},
  };
  ByobNetOptions o = ByobNetOptions(stages).model_name(model_name).stem_chs(64);
  SelfAttnConfig a;
  if (model_name == "botnet26t_256") {
    a.layer = SelfAttnLayer::bottleneck;
    o.img_size(Pair2(256));  // botnet26t_256: kwargs.setdefault('img_size', 256)
  } else if (model_name == "halonet26t") {
    a.layer = SelfAttnLayer::halo;
    a.block_size = 8;
    a.halo_size = 2;
  } else if (model_name == "lambda_resnet26t") {
    a.layer = SelfAttnLayer::lambda;
    a.r = 9;
  } else {
    throw ValueError("byoanet_options: unknown model_name '" + model_name +
                     "' (botnet26t_256, halonet26t, lambda_resnet26t)");
  }
  return o.self_attn(a);
}

ByobNet::ByobNet(const ByobNetOptions& options) : options_(options) {
  const auto& o = options_;
  CVATTN_CHECK(!o.stages().empty() && o.num_classes() >= 1 && o.in_chans() >= 1, ValueError,
               "ByobNetOptions: stages (", o.stages().size(), "), num_classes (", o.num_classes(),
               ") and in_chans (", o.in_chans(), ") must be positive");
  const bool fixed = o.img_size().h > 0 || o.img_size().w > 0;
  CVATTN_CHECK(!fixed || (o.img_size().h >= 1 && o.img_size().w >= 1), ValueError,
               "ByobNetOptions: img_size must be positive or 0, got ", o.img_size().h, "x",
               o.img_size().w);
  stem_ = register_module("stem", std::make_shared<TieredStem>(o.in_chans(), o.stem_chs()));
  std::int64_t reduction = 4;
  // timm's reduce_feat_size: s // stride, after each stage's first block.
  Pair2 feat = fixed ? Pair2(o.img_size().h / 4, o.img_size().w / 4) : Pair2(0);
  std::int64_t prev = o.stem_chs();
  stages_ = register_module("stages", std::make_shared<BlockList>());
  for (std::size_t s = 0; s < o.stages().size(); ++s) {
    const ByobStage& st = o.stages()[s];
    CVATTN_CHECK(!st.blocks.empty() && st.channels >= 1 && st.stride >= 1, ValueError,
                 "ByobNetOptions: stage ", s, " needs blocks, channels >= 1 and stride >= 1");
    auto stage = std::make_shared<BlockList>();
    for (std::size_t j = 0; j < st.blocks.size(); ++j) {
      const std::int64_t stride = j == 0 ? st.stride : 1;
      const ByobBlockOptions bo = ByobBlockOptions(prev, st.channels)
                                      .stride(stride)
                                      .bottle_ratio(st.bottle_ratio)
                                      .downsample(o.downsample())
                                      .self_attn(o.self_attn())
                                      .feat_size(feat);
      if (st.blocks[j] == ByobBlockType::bottle) {
        stage->push_back(std::make_shared<BottleneckBlock>(bo));
      } else {
        stage->push_back(std::make_shared<SelfAttnBlock>(bo));
        if (o.self_attn().layer == SelfAttnLayer::halo) {
          // HaloAttn needs its input in whole blocks.
          input_multiple_ = std::max(input_multiple_, reduction * o.self_attn().block_size);
        }
      }
      if (j == 0 && stride > 1) {
        feat = Pair2(feat.h / stride, feat.w / stride);
        reduction *= stride;
      }
      prev = st.channels;
    }
    stages_->push_back(stage);
  }
  num_features_ = prev;
  fc_ = register_module("head", std::make_shared<ClassifierHeadKeys>(prev, o.num_classes()))->fc;
}

NetworkOutput ByobNet::run(const Tensor& x, bool keep_maps) const {
  const std::string where = options_.model_name() + "::forward";
  check_defined(x, "x", where.c_str());
  check_shape(x, {kAny, options_.in_chans(), kAny, kAny}, "x", where.c_str());
  CVATTN_CHECK(x.dim(0) >= 1 && x.dim(2) >= 1 && x.dim(3) >= 1, ShapeError, where,
               ": tensor 'x' expected [N >= 1, ", options_.in_chans(), ", H >= 1, W >= 1], got ",
               cvattn::to_string(x.shape()));
  const Pair2 img = options_.img_size();
  CVATTN_CHECK(img.h == 0 || (x.dim(2) == img.h && x.dim(3) == img.w), ShapeError, where,
               ": the input size is fixed at ", img.h, "x", img.w,
               " (timm's img_size: the relative-position tables are made for it), got ", x.dim(2),
               "x", x.dim(3));
  CVATTN_CHECK(x.dim(2) % input_multiple_ == 0 && x.dim(3) % input_multiple_ == 0, ShapeError,
               where, ": H and W must be multiples of ", input_multiple_, " (whole halo blocks of ",
               options_.self_attn().block_size, " at every HaloAttn layer), got ", x.dim(2), "x",
               x.dim(3));
  const Tensor y = stem_->forward(x);
  Attended a = keep_maps ? stages_->forward_with_maps(y) : Attended{stages_->forward(y), {}};
  NetworkOutput out;
  out.feature_map = a.output;
  if (keep_maps) detail::add_prefixed(out.maps, "stages", a.maps);
  out.features = F::global_avg_pool2d(a.output).reshape({a.output.dim(0), a.output.dim(1)});
  out.logits = fc_->forward(out.features);
  return out;
}

std::string ByobNet::describe() const {
  std::ostringstream s;
  s << "ByobNet(model_name=" << options_.model_name() << ", num_classes=" << options_.num_classes()
    << ", num_features=" << num_features_ << ", self_attn=" << to_string(options_.self_attn().layer)
    << ")";
  return s.str();
}

}  // namespace cvattn::models

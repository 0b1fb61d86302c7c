#include "cvattn/models/resnet.hpp"

#include <sstream>
#include <utility>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/functional/residual.hpp"
#include "cvattn/functional/saliency.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/sequential.hpp"
#include "models/detail/maps.hpp"

namespace cvattn::models {

namespace F = cvattn::functional;

namespace {

// timm's get_padding for the symmetric '' padding.
std::int64_t symmetric_padding(std::int64_t kernel, std::int64_t stride, std::int64_t dilation) {
  return ((stride - 1) + dilation * (kernel - 1)) / 2;
}

std::shared_ptr<Conv2d> conv(std::int64_t in, std::int64_t out, std::int64_t kernel,
                             std::int64_t stride = 1, std::int64_t padding = 0,
                             std::int64_t groups = 1) {
  return std::make_shared<Conv2d>(
      Conv2dOptions(in, out, kernel).stride(stride).padding(padding).groups(groups).bias(false));
}

std::shared_ptr<BatchNorm2d> bn(std::int64_t channels) {
  return std::make_shared<BatchNorm2d>(BatchNorm2dOptions(channels));
}

// timm: int(math.floor(planes * (base_width / 64)) * cardinality)
std::int64_t bottleneck_width(const ResNetBlockOptions& o) {
  return static_cast<std::int64_t>(static_cast<double>(o.planes()) *
                                   (static_cast<double>(o.base_width()) / 64.0)) *
         o.cardinality();
}

}  // namespace

BlockAttention parse_block_attention(const std::string& word) {
  if (word == "none") return BlockAttention::none;
  if (word == "se") return BlockAttention::se;
  if (word == "eca") return BlockAttention::eca;
  throw ValueError("attn_layer: expected none, se or eca, got '" + word + "'");
}

const char* to_string(BlockAttention attention) {
  switch (attention) {
    case BlockAttention::se:
      return "se";
    case BlockAttention::eca:
      return "eca";
    case BlockAttention::none:
      break;
  }
  return "none";
}

// ---------------------------------------------------------------------------------------------
// FoldedConvBn, ConvNormAct, ResNetDownsample

FoldedConvBn::FoldedConvBn(std::shared_ptr<Conv2d> conv, std::shared_ptr<BatchNorm2d> bn)
    : conv_(std::move(conv)), bn_(std::move(bn)) {
  const Conv2dOptions& o = conv_->options();
  options_ = F::Conv2dOptions()
                 .stride(o.stride())
                 .padding(o.padding())
                 .dilation(o.dilation())
                 .groups(o.groups());
  fold();
}

void FoldedConvBn::fold() {
  std::tie(weight_, bias_) =
      F::fold_batch_norm(conv_->weight(), conv_->bias(), bn_->running_mean(), bn_->running_var(),
                         bn_->weight(), bn_->bias(), bn_->options().eps());
  prepared_ = F::Conv2dWeight(weight_, options_);
}

Tensor FoldedConvBn::operator()(const Tensor& x, ActLayer act) const {
  check_shape(x, {kAny, conv_->options().in_channels(), kAny, kAny}, "x", "Conv2d::forward");
  return F::conv2d(x, prepared_, bias_, act);
}

ConvNormAct::ConvNormAct(const ConvNormActOptions& options) : options_(options) {
  const auto& o = options_;
  auto c = register_module(
      "conv", std::make_shared<Conv2d>(
                  Conv2dOptions(o.in_channels(), o.out_channels(), o.kernel_size())
                      .stride(o.stride())
                      .padding(symmetric_padding(o.kernel_size(), o.stride(), o.dilation()))
                      .dilation(o.dilation())
                      .groups(o.groups())
                      .bias(false)));
  auto b = register_module("bn", bn(o.out_channels()));
  conv_bn_ = FoldedConvBn(c, b);
}

void ConvNormAct::on_weights_loaded() { conv_bn_.fold(); }

Tensor ConvNormAct::forward(const Tensor& x) const { return conv_bn_(x, options_.apply_act()); }

std::string ConvNormAct::describe() const {
  return std::string("ConvNormAct(") + (options_.apply_act() ? "act=ReLU" : "act=None") + ")";
}

ResNetDownsample::ResNetDownsample(std::int64_t in_channels, std::int64_t out_channels,
                                   std::int64_t stride, bool avg)
    : stride_(stride), avg_(avg) {
  CVATTN_CHECK(stride >= 1, ValueError, "ResNetDownsample: stride must be >= 1, got ", stride);
  // downsample_conv: kernel 1 with stride; downsample_avg: pool (index 0), then a 1x1 conv.
  const std::string c = avg ? "1" : "0", b = avg ? "2" : "1";
  auto cv = register_module(c, conv(in_channels, out_channels, 1, avg ? 1 : stride));
  auto nm = register_module(b, bn(out_channels));
  conv_bn_ = FoldedConvBn(cv, nm);
}

void ResNetDownsample::on_weights_loaded() { conv_bn_.fold(); }

Tensor ResNetDownsample::forward(const Tensor& x) const {
  if (avg_ && stride_ > 1) {
    const Tensor pooled = F::avg_pool2d(
        x, F::AvgPool2dOptions(2).stride(stride_).ceil_mode(true).count_include_pad(false));
    return conv_bn_(pooled, false);
  }
  return conv_bn_(x, false);
}

std::string ResNetDownsample::describe() const {
  return "Downsample(stride=" + std::to_string(stride_) + (avg_ ? ", avg_down=True)" : ")");
}

// ---------------------------------------------------------------------------------------------
// Blocks

ResidualBlock::ResidualBlock(const ResNetBlockOptions& options) : options_(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.inplanes() >= 1 && o.planes() >= 1 && o.stride() >= 1 && o.cardinality() >= 1 &&
                   o.base_width() >= 1 && o.reduce_first() >= 1,
               ValueError, "ResNetBlockOptions: inplanes (", o.inplanes(), "), planes (",
               o.planes(), "), stride (", o.stride(), "), cardinality (", o.cardinality(),
               "), base_width (", o.base_width(), ") and reduce_first (", o.reduce_first(),
               ") must be positive");
}

void ResidualBlock::register_attention(std::int64_t channels) {
  switch (options_.attn_layer()) {
    case BlockAttention::se:
      se_ = register_module(
          "se", std::make_shared<SqueezeExcitation>(SqueezeExcitationOptions(channels)));
      break;
    case BlockAttention::eca:
      eca_ = register_module("se", std::make_shared<Eca>(EcaOptions(channels)));
      break;
    case BlockAttention::none:
      break;
  }
}

void ResidualBlock::register_downsample(std::int64_t out_channels) {
  if (!options_.downsample()) return;
  downsample_ = register_module(
      "downsample", std::make_shared<ResNetDownsample>(options_.inplanes(), out_channels,
                                                       options_.stride(), options_.avg_down()));
}

Attended ResidualBlock::finish(const Tensor& x, const Tensor& identity, bool keep_maps) const {
  Attended out;
  Tensor y = x;
  if (se_ || eca_) {
    Attended a = se_ ? se_->forward_with_maps(x) : eca_->forward_with_maps(x);
    y = a.output;
    if (keep_maps) detail::add_prefixed(out.maps, "se", a.maps);
  }
  const Tensor shortcut = downsample_ ? downsample_->forward(identity) : identity;
  CVATTN_CHECK(shortcut.shape() == y.shape(), ShapeError, describe(), ": the shortcut ",
               cvattn::to_string(shortcut.shape()), " does not match the residual ",
               cvattn::to_string(y.shape()), "; the block needs downsample=true");
  out.output = F::residual_add(y, shortcut, true);
  return out;
}

BasicBlock::BasicBlock(const ResNetBlockOptions& options) : ResidualBlock(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.cardinality() == 1 && o.base_width() == 64, ValueError,
               "BasicBlock: only cardinality 1 and base_width 64 (as timm), got ", o.cardinality(),
               " and ", o.base_width());
  const std::int64_t first = o.planes() / o.reduce_first();
  CVATTN_CHECK(first >= 1, ValueError, "BasicBlock: planes / reduce_first must be >= 1");
  auto c1 = register_module("conv1", conv(o.inplanes(), first, 3, o.stride(), 1));
  auto b1 = register_module("bn1", bn(first));
  auto c2 = register_module("conv2", conv(first, o.planes(), 3, 1, 1));
  auto b2 = register_module("bn2", bn(o.planes()));
  conv_bn1_ = FoldedConvBn(c1, b1);
  conv_bn2_ = FoldedConvBn(c2, b2);
  register_attention(o.planes());
  register_downsample(o.planes());
}

void BasicBlock::on_weights_loaded() {
  conv_bn1_.fold();
  conv_bn2_.fold();
}

Attended BasicBlock::run(const Tensor& x, bool keep_maps) const {
  const Tensor y = conv_bn2_(conv_bn1_(x, true), false);
  return finish(y, x, keep_maps);
}

std::string BasicBlock::describe() const {
  const auto& o = options_;
  return "BasicBlock(inplanes=" + std::to_string(o.inplanes()) +
         ", planes=" + std::to_string(o.planes()) + ", stride=" + std::to_string(o.stride()) +
         ", attn_layer=" + to_string(o.attn_layer()) + ")";
}

Bottleneck::Bottleneck(const ResNetBlockOptions& options) : ResidualBlock(options) {
  const auto& o = options_;
  width_ = bottleneck_width(o);
  const std::int64_t first = width_ / o.reduce_first();
  CVATTN_CHECK(width_ >= 1 && first >= 1, ValueError, "Bottleneck: width (", width_,
               ") and width / reduce_first must be >= 1");
  const std::int64_t out = out_channels();
  auto c1 = register_module("conv1", conv(o.inplanes(), first, 1));
  auto b1 = register_module("bn1", bn(first));
  auto c2 = register_module("conv2", conv(first, width_, 3, o.stride(), 1, o.cardinality()));
  auto b2 = register_module("bn2", bn(width_));
  auto c3 = register_module("conv3", conv(width_, out, 1));
  auto b3 = register_module("bn3", bn(out));
  conv_bn1_ = FoldedConvBn(c1, b1);
  conv_bn2_ = FoldedConvBn(c2, b2);
  conv_bn3_ = FoldedConvBn(c3, b3);
  register_attention(out);
  register_downsample(out);
}

void Bottleneck::on_weights_loaded() {
  conv_bn1_.fold();
  conv_bn2_.fold();
  conv_bn3_.fold();
}

Attended Bottleneck::run(const Tensor& x, bool keep_maps) const {
  const Tensor y = conv_bn3_(conv_bn2_(conv_bn1_(x, true), true), false);
  return finish(y, x, keep_maps);
}

std::string Bottleneck::describe() const {
  const auto& o = options_;
  return "Bottleneck(inplanes=" + std::to_string(o.inplanes()) +
         ", planes=" + std::to_string(o.planes()) + ", stride=" + std::to_string(o.stride()) +
         ", cardinality=" + std::to_string(o.cardinality()) +
         ", base_width=" + std::to_string(o.base_width()) +
         ", attn_layer=" + to_string(o.attn_layer()) + ")";
}

SelectiveKernelBasic::SelectiveKernelBasic(const ResNetBlockOptions& options)
    : ResidualBlock(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.cardinality() == 1 && o.base_width() == 64, ValueError,
               "SelectiveKernelBasic: only cardinality 1 and base_width 64 (as timm), got ",
               o.cardinality(), " and ", o.base_width());
  const std::int64_t first = o.planes() / o.reduce_first();
  CVATTN_CHECK(first >= 1, ValueError, "SelectiveKernelBasic: planes / reduce_first must be >= 1");
  conv1_ = register_module("conv1",
                           std::make_shared<SelectiveKernel>(SelectiveKernelOptions(o.inplanes())
                                                                 .out_channels(first)
                                                                 .stride(o.stride())
                                                                 .rd_ratio(o.sk_rd_ratio())
                                                                 .rd_divisor(o.sk_rd_divisor())
                                                                 .split_input(o.sk_split_input())));
  conv2_ = register_module("conv2", std::make_shared<ConvNormAct>(
                                        ConvNormActOptions(first, o.planes(), 3).apply_act(false)));
  register_attention(o.planes());
  register_downsample(o.planes());
}

Attended SelectiveKernelBasic::run(const Tensor& x, bool keep_maps) const {
  Attended sk = keep_maps ? conv1_->forward_with_maps(x) : Attended{conv1_->forward(x), {}};
  Attended out = finish(conv2_->forward(sk.output), x, keep_maps);
  if (!keep_maps) return out;
  Attended ordered{out.output, {}};
  detail::add_prefixed(ordered.maps, "conv1", sk.maps);
  for (const auto& [name, map] : out.maps.items()) ordered.maps.add(name, map);
  return ordered;
}

std::string SelectiveKernelBasic::describe() const {
  const auto& o = options_;
  return "SelectiveKernelBasic(inplanes=" + std::to_string(o.inplanes()) +
         ", planes=" + std::to_string(o.planes()) + ", stride=" + std::to_string(o.stride()) +
         ", attn_layer=" + to_string(o.attn_layer()) + ")";
}

SelectiveKernelBottleneck::SelectiveKernelBottleneck(const ResNetBlockOptions& options)
    : ResidualBlock(options) {
  const auto& o = options_;
  const std::int64_t width = bottleneck_width(o);
  const std::int64_t first = width / o.reduce_first();
  CVATTN_CHECK(width >= 1 && first >= 1, ValueError, "SelectiveKernelBottleneck: width (", width,
               ") and width / reduce_first must be >= 1");
  conv1_ = register_module(
      "conv1", std::make_shared<ConvNormAct>(ConvNormActOptions(o.inplanes(), first, 1)));
  conv2_ = register_module("conv2",
                           std::make_shared<SelectiveKernel>(SelectiveKernelOptions(first)
                                                                 .out_channels(width)
                                                                 .stride(o.stride())
                                                                 .groups(o.cardinality())
                                                                 .rd_ratio(o.sk_rd_ratio())
                                                                 .rd_divisor(o.sk_rd_divisor())
                                                                 .split_input(o.sk_split_input())));
  conv3_ = register_module(
      "conv3",
      std::make_shared<ConvNormAct>(ConvNormActOptions(width, out_channels(), 1).apply_act(false)));
  register_attention(out_channels());
  register_downsample(out_channels());
}

Attended SelectiveKernelBottleneck::run(const Tensor& x, bool keep_maps) const {
  const Tensor y = conv1_->forward(x);
  Attended sk = keep_maps ? conv2_->forward_with_maps(y) : Attended{conv2_->forward(y), {}};
  Attended out = finish(conv3_->forward(sk.output), x, keep_maps);
  if (!keep_maps) return out;
  Attended ordered{out.output, {}};
  detail::add_prefixed(ordered.maps, "conv2", sk.maps);
  for (const auto& [name, map] : out.maps.items()) ordered.maps.add(name, map);
  return ordered;
}

std::string SelectiveKernelBottleneck::describe() const {
  const auto& o = options_;
  return "SelectiveKernelBottleneck(inplanes=" + std::to_string(o.inplanes()) +
         ", planes=" + std::to_string(o.planes()) + ", stride=" + std::to_string(o.stride()) +
         ", cardinality=" + std::to_string(o.cardinality()) +
         ", attn_layer=" + to_string(o.attn_layer()) + ")";
}

ResNestBottleneck::ResNestBottleneck(const ResNetBlockOptions& options) : ResidualBlock(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.reduce_first() == 1 && o.attn_layer() == BlockAttention::none, ValueError,
               "ResNestBottleneck: only reduce_first 1 and no attn_layer (as timm), got ",
               o.reduce_first(), " and ", to_string(o.attn_layer()));
  const std::int64_t width = bottleneck_width(o);
  CVATTN_CHECK(width >= 1 && o.radix() >= 1, ValueError, "ResNestBottleneck: width (", width,
               ") and radix (", o.radix(), ") must be >= 1");
  // timm: avd with stride > 1 (or is_first, which make_blocks never sets) strides by the pool.
  std::int64_t stride = o.stride();
  if (o.avd() && stride > 1) {
    avd_stride_ = stride;
    stride = 1;
  }
  auto c1 = register_module("conv1", conv(o.inplanes(), width, 1));
  auto b1 = register_module("bn1", bn(width));
  conv_bn1_ = FoldedConvBn(c1, b1);
  conv2_ = register_module("conv2", std::make_shared<SplitAttn>(SplitAttnOptions(width, width)
                                                                    .kernel_size(3)
                                                                    .stride(stride)
                                                                    .padding(1)
                                                                    .groups(o.cardinality())
                                                                    .radix(o.radix())
                                                                    .norm(true)));
  auto c3 = register_module("conv3", conv(width, out_channels(), 1));
  auto b3 = register_module("bn3", bn(out_channels()));
  conv_bn3_ = FoldedConvBn(c3, b3);
  register_downsample(out_channels());
}

void ResNestBottleneck::on_weights_loaded() {
  conv_bn1_.fold();
  conv_bn3_.fold();
}

Attended ResNestBottleneck::run(const Tensor& x, bool keep_maps) const {
  // nn.AvgPool2d(3, avd_stride, padding=1): count_include_pad, floor.
  const auto avd = [&](const Tensor& t) {
    return F::avg_pool2d(t, F::AvgPool2dOptions(3).stride(avd_stride_).padding(1));
  };
  Tensor y = conv_bn1_(x, true);
  if (avd_stride_ > 0 && options_.avd_first()) y = avd(y);
  Attended splat = keep_maps ? conv2_->forward_with_maps(y) : Attended{conv2_->forward(y), {}};
  y = splat.output;
  if (avd_stride_ > 0 && !options_.avd_first()) y = avd(y);
  Attended out = finish(conv_bn3_(y, false), x, keep_maps);
  if (keep_maps) detail::add_prefixed(out.maps, "conv2", splat.maps);
  return out;
}

std::string ResNestBottleneck::describe() const {
  const auto& o = options_;
  return "ResNestBottleneck(inplanes=" + std::to_string(o.inplanes()) +
         ", planes=" + std::to_string(o.planes()) + ", stride=" + std::to_string(o.stride()) +
         ", radix=" + std::to_string(o.radix()) + ", avd=" + (o.avd() ? "True" : "False") +
         ", avd_first=" + (o.avd_first() ? "True" : "False") + ")";
}

// ---------------------------------------------------------------------------------------------
// Stage and network

ResNet::ResNet(const ResNetOptions& options) : options_(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.layers().size() == o.channels().size() && !o.layers().empty(), ValueError,
               "ResNetOptions: layers (", o.layers().size(), " stages) and channels (",
               o.channels().size(), ") must have the same non-zero length");
  CVATTN_CHECK(o.num_classes() >= 1 && o.in_chans() >= 1 && o.stem_width() >= 4, ValueError,
               "ResNetOptions: num_classes (", o.num_classes(), ") and in_chans (", o.in_chans(),
               ") must be positive and stem_width (", o.stem_width(), ") at least 4");
  const bool deep = o.stem_type() != StemType::plain;
  std::int64_t inplanes = deep ? o.stem_width() * 2 : 64;
  auto stem_bn = [&](std::int64_t c) { return bn(c); };
  if (deep) {
    const std::int64_t c0 =
        o.stem_type() == StemType::deep_tiered ? 3 * (o.stem_width() / 4) : o.stem_width();
    const std::int64_t c1 = o.stem_width();
    auto seq = register_module("conv1", std::make_shared<Sequential>());
    auto a = seq->push_back(conv(o.in_chans(), c0, 3, 2, 1));
    auto an = seq->push_back(stem_bn(c0));
    seq->push_back(std::make_shared<ReLU>());
    auto b = seq->push_back(conv(c0, c1, 3, 1, 1));
    auto bnn = seq->push_back(stem_bn(c1));
    seq->push_back(std::make_shared<ReLU>());
    auto c = seq->push_back(conv(c1, inplanes, 3, 1, 1));
    stem_.emplace_back(a, an);
    stem_.emplace_back(b, bnn);
    stem_.emplace_back(c, register_module("bn1", stem_bn(inplanes)));
  } else {
    auto c = register_module("conv1", conv(o.in_chans(), inplanes, 7, 2, 3));
    stem_.emplace_back(c, register_module("bn1", stem_bn(inplanes)));
  }

  for (std::size_t s = 0; s < o.layers().size(); ++s) {
    auto stage = register_module("layer" + std::to_string(s + 1), std::make_shared<BlockList>());
    const std::int64_t planes = o.channels()[s];
    const std::int64_t expansion = o.block() == ResNetBlock::bottleneck ||
                                           o.block() == ResNetBlock::selective_kernel_bottleneck ||
                                           o.block() == ResNetBlock::resnest_bottleneck
                                       ? 4
                                       : 1;
    CVATTN_CHECK(o.layers()[s] >= 1, ValueError, "ResNetOptions: stage ", s + 1,
                 " needs at least one block, got ", o.layers()[s]);
    for (std::int64_t i = 0; i < o.layers()[s]; ++i) {
      const std::int64_t stride = (s > 0 && i == 0) ? 2 : 1;
      ResNetBlockOptions bo =
          ResNetBlockOptions(inplanes, planes)
              .stride(stride)
              .cardinality(o.cardinality())
              .base_width(o.base_width())
              .attn_layer(o.attn_layer())
              .downsample(i == 0 && (stride != 1 || inplanes != planes * expansion))
              .avg_down(o.avg_down())
              .sk_rd_ratio(o.sk_rd_ratio())
              .sk_rd_divisor(o.sk_rd_divisor())
              .sk_split_input(o.sk_split_input())
              .radix(o.radix())
              .avd(o.avd())
              .avd_first(o.avd_first());
      switch (o.block()) {
        case ResNetBlock::basic:
          stage->push_back(std::make_shared<BasicBlock>(bo));
          break;
        case ResNetBlock::bottleneck:
          stage->push_back(std::make_shared<Bottleneck>(bo));
          break;
        case ResNetBlock::selective_kernel_basic:
          stage->push_back(std::make_shared<SelectiveKernelBasic>(bo));
          break;
        case ResNetBlock::selective_kernel_bottleneck:
          stage->push_back(std::make_shared<SelectiveKernelBottleneck>(bo));
          break;
        case ResNetBlock::resnest_bottleneck:
          stage->push_back(std::make_shared<ResNestBottleneck>(bo));
          break;
      }
      inplanes = planes * expansion;
    }
    stages_.push_back(stage);
  }
  num_features_ = inplanes;
  fc_ = register_module("fc", std::make_shared<Linear>(LinearOptions(inplanes, o.num_classes())));
}

void ResNet::on_weights_loaded() {
  for (FoldedConvBn& s : stem_) s.fold();
}

NetworkOutput ResNet::run(const Tensor& x, bool keep_maps) const {
  const char* where = "ResNet::forward";
  check_defined(x, "x", where);
  check_shape(x, {kAny, options_.in_chans(), kAny, kAny}, "x", where);
  CVATTN_CHECK(x.dim(0) >= 1 && x.dim(2) >= 1 && x.dim(3) >= 1, ShapeError, where,
               ": tensor 'x' expected [N >= 1, ", options_.in_chans(), ", H >= 1, W >= 1], got ",
               cvattn::to_string(x.shape()));
  Tensor y = x;
  for (const FoldedConvBn& s : stem_) y = s(y, true);
  y = F::max_pool2d(y, F::MaxPool2dOptions(3).stride(2).padding(1));
  NetworkOutput out;
  for (std::size_t s = 0; s < stages_.size(); ++s) {
    if (!keep_maps) {
      y = stages_[s]->forward(y);
      continue;
    }
    Attended a = stages_[s]->forward_with_maps(y);
    y = a.output;
    detail::add_prefixed(out.maps, "layer" + std::to_string(s + 1), a.maps);
  }
  out.feature_map = y;
  out.features = F::global_avg_pool2d(y).reshape({y.dim(0), y.dim(1)});
  out.logits = fc_->forward(out.features);
  return out;
}

std::string ResNet::describe() const {
  std::ostringstream s;
  s << "ResNet(model_name=" << options_.model_name() << ", num_classes=" << options_.num_classes()
    << ", num_features=" << num_features_ << ")";
  return s.str();
}

}  // namespace cvattn::models

#include "cvattn/modules/light_cbam.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/functional/linear.hpp"
#include "modules/detail/gate_modules.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace F = cvattn::functional;

namespace cvattn {
LightCbamOptions LightCbamOptions::from_state_dict(const StateDict& dict,
                                                   const std::string& prefix) {
  const char* where = "LightCbamOptions::from_state_dict";
  const StateDict d = detail::scoped(dict, prefix);
  const Shape& w1 = detail::require_conv1x1(d, "channel.fc1.weight", where);
  const Shape& ws = detail::require_shape(d, "spatial.conv.conv.weight", {1, 1, kAny, kAny}, where);
  CVATTN_CHECK(ws[2] == ws[3], ValueError, where,
               ": 'spatial.conv.conv.weight' expected a square kernel [1, 1, k, k], got ",
               to_string(ws));
  return LightCbamOptions(w1[1], w1[0])
      .spatial_kernel_size(ws[2])
      .mlp_bias(d.contains("channel.fc1.bias") || d.contains("channel.fc2.bias"));
}

LightCbam::LightCbam(const LightCbamOptions& options) : options_(options) {
  const std::int64_t c = options_.channels(), r = options_.rd_channels();
  const std::int64_t k = options_.spatial_kernel_size();
  CVATTN_CHECK(c >= 1 && r >= 1, ValueError,
               "LightCbamOptions: channels and rd_channels must be >= 1, got ", c, " and ", r);
  CVATTN_CHECK(k >= 1 && k % 2 == 1, ValueError,
               "LightCbamOptions: spatial_kernel_size must be odd and >= 1 (padding (k - 1) / 2 "
               "keeps H, W), got ",
               k);
  auto channel =
      register_module("channel", std::make_shared<detail::ModuleGroup>("LightChannelAttn"));
  fc1_ = channel->add("fc1",
                      std::make_shared<Conv2d>(Conv2dOptions(c, r, 1).bias(options_.mlp_bias())));
  fc2_ = channel->add("fc2",
                      std::make_shared<Conv2d>(Conv2dOptions(r, c, 1).bias(options_.mlp_bias())));
  auto spatial =
      register_module("spatial", std::make_shared<detail::ModuleGroup>("LightSpatialAttn"));
  auto conv = spatial->add("conv", std::make_shared<detail::ModuleGroup>("ConvNormAct"));
  spatial_conv_ = conv->add(
      "conv", std::make_shared<Conv2d>(Conv2dOptions(1, 1, k).padding((k - 1) / 2).bias(false)));
  spatial_bn_ = conv->add("bn", std::make_shared<BatchNorm2d>(BatchNorm2dOptions(1)));
}

std::string LightCbam::describe() const {
  std::ostringstream out;
  out << "LightCbam(channels=" << options_.channels() << ", rd_channels=" << options_.rd_channels()
      << ", spatial_kernel_size=" << options_.spatial_kernel_size()
      << ", mlp_bias=" << (options_.mlp_bias() ? "true" : "false") << ")";
  return out.str();
}

Tensor LightCbam::forward(const Tensor& x) const { return run(x, false).output; }

Attended LightCbam::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended LightCbam::run(const Tensor& x, bool keep_maps) const {
  const std::int64_t c = options_.channels(), r = options_.rd_channels();
  check_shape(x, {kAny, c, kAny, kAny}, "x", "LightCbam::forward");
  const Tensor s = F::channel_pool(x, /*add_maxpool=*/true);  // [N, C]
  const Tensor h = F::relu(F::linear(s, fc1_->weight().reshape({r, c}), fc1_->bias()));
  const Tensor g = F::sigmoid(F::linear(h, fc2_->weight().reshape({c, r}), fc2_->bias()));
  // x1 = x * g is never stored: the spatial pooling and the output read x and g.
  const std::int64_t k = options_.spatial_kernel_size();
  const Tensor logits = detail::maybe_batch_norm(
      spatial_bn_, F::conv2d(F::channel_mean_max_blend(x, g), spatial_conv_->weight(), {},
                             F::Conv2dOptions().padding((k - 1) / 2)));  // [N, 1, H, W]
  const Tensor a = F::sigmoid(logits);
  Attended out{F::scale_spatial(x, a, g), {}};  // (x * g) * a
  if (keep_maps) {
    out.maps.add(maps::kChannelAttention, g);
    out.maps.add(maps::kSpatialAttention, a);
  }
  return out;
}

}  // namespace cvattn

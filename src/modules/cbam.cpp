#include "cvattn/modules/cbam.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/channel_attention.hpp"
#include "modules/detail/channel_gate.hpp"
#include "modules/detail/key_scope.hpp"
#include "modules/detail/reduced_channels.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace cvattn {
namespace {

namespace F = cvattn::functional;
constexpr const char* kWhere = "Cbam::forward";

}  // namespace

CbamOptions CbamOptions::from_state_dict(const StateDict& dict, const std::string& prefix) {
  if (!prefix.empty()) {
    return detail::with_key_scope(dict, prefix,
                                  [](const StateDict& d) { return from_state_dict(d); });
  }
  const char* where = "CbamOptions::from_state_dict";
  const Shape& w1 = detail::require_conv1x1(dict, "channel.fc1.weight", where);
  const Shape& wc =
      detail::require_shape(dict, "spatial.conv.conv.weight", {1, 2, kAny, kAny}, where);
  CVATTN_CHECK(wc[2] == wc[3], ValueError, where,
               ": 'spatial.conv.conv.weight' expected [1, 2, k, k] (a square kernel), got ",
               to_string(wc));
  return CbamOptions(w1[1]).rd_channels(w1[0]).spatial_kernel_size(wc[2]).mlp_bias(
      dict.contains("channel.fc1.bias") || dict.contains("channel.fc2.bias"));
}

std::int64_t CbamOptions::reduced_channels() const {
  CVATTN_CHECK(channels_ >= 1, ValueError, "CbamOptions: channels must be >= 1, got ", channels_);
  CVATTN_CHECK(
      spatial_kernel_size_ >= 1 && spatial_kernel_size_ % 2 == 1 && spatial_kernel_size_ <= 255,
      ValueError,
      "CbamOptions: spatial_kernel_size must be odd and in [1, 255] (padding (k-1)/2 "
      "keeps H, W), got ",
      spatial_kernel_size_);
  return detail::reduced_channels("CbamOptions", channels_, rd_channels_, rd_ratio_, rd_divisor_,
                                  0.0);
}

Cbam::Cbam(const CbamOptions& options) : options_(options), rd_(options.reduced_channels()) {
  const std::int64_t c = options_.channels();
  const std::int64_t k = options_.spatial_kernel_size();
  fc1_weight_ = register_parameter("channel.fc1.weight", {rd_, c, 1, 1});
  if (options_.mlp_bias()) fc1_bias_ = register_parameter("channel.fc1.bias", {rd_});
  fc2_weight_ = register_parameter("channel.fc2.weight", {c, rd_, 1, 1});
  if (options_.mlp_bias()) fc2_bias_ = register_parameter("channel.fc2.bias", {c});
  conv_weight_ = register_parameter("spatial.conv.conv.weight", {1, 2, k, k});
  bn_weight_ = register_parameter("spatial.conv.bn.weight", {1});
  bn_weight_.fill(1.0f);
  bn_bias_ = register_parameter("spatial.conv.bn.bias", {1});
  bn_mean_ = register_buffer("spatial.conv.bn.running_mean", {1});
  bn_var_ = register_buffer("spatial.conv.bn.running_var", {1});
  bn_var_.fill(1.0f);
  register_buffer("spatial.conv.bn.num_batches_tracked", {}, /*integer=*/true);
}

std::string Cbam::describe() const {
  std::ostringstream out;
  out << "Cbam(channels=" << options_.channels() << ", rd_channels=" << rd_
      << ", spatial_kernel_size=" << options_.spatial_kernel_size()
      << ", mlp_bias=" << (options_.mlp_bias() ? "true" : "false")
      << ", gate_layer=" << to_string(options_.gate_layer()) << ")";
  return out.str();
}

Tensor Cbam::forward(const Tensor& x) const { return run(x, false).output; }

Attended Cbam::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended Cbam::run(const Tensor& x, bool keep_maps) const {
  detail::gate_input(x, options_.channels(), kWhere, "the gates pool over them");
  F::CbamWeights w;
  w.fc1_weight = fc1_weight_;
  w.fc2_weight = fc2_weight_;
  if (options_.mlp_bias()) {
    w.fc1_bias = fc1_bias_;
    w.fc2_bias = fc2_bias_;
  }
  w.spatial_weight = conv_weight_;
  w.bn_weight = bn_weight_;
  w.bn_bias = bn_bias_;
  w.bn_mean = bn_mean_;
  w.bn_var = bn_var_;
  F::CbamGated r = F::cbam(x, w, options_.gate_layer());
  Attended result{r.output, {}};
  if (keep_maps) {
    result.maps.add(maps::kChannelAttention, r.channel_gate);
    result.maps.add(maps::kSpatialAttention, r.spatial_gate);
  }
  return result;
}

}  // namespace cvattn

#include "cvattn/modules/squeeze_excitation.hpp"

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
constexpr const char* kWhere = "SqueezeExcitation::forward";
}  // namespace

SqueezeExcitationOptions SqueezeExcitationOptions::from_state_dict(const StateDict& dict,
                                                                   const std::string& prefix) {
  if (!prefix.empty()) {
    return detail::with_key_scope(dict, prefix,
                                  [](const StateDict& d) { return from_state_dict(d); });
  }
  const char* where = "SqueezeExcitationOptions::from_state_dict";
  const Shape& w1 = detail::require_conv1x1(dict, "fc1.weight", where);
  return SqueezeExcitationOptions(w1[1])
      .rd_channels(w1[0])
      .bias(dict.contains("fc1.bias") || dict.contains("fc2.bias"))
      .norm_layer(dict.has_prefix("bn") ? NormLayer::batch_norm : NormLayer::none);
}

std::int64_t SqueezeExcitationOptions::reduced_channels() const {
  CVATTN_CHECK(channels_ >= 1, ValueError, "SqueezeExcitationOptions: channels must be >= 1, got ",
               channels_);
  return detail::reduced_channels("SqueezeExcitationOptions", channels_, rd_channels_, rd_ratio_,
                                  rd_divisor_, 0.0);
}

SqueezeExcitation::SqueezeExcitation(const SqueezeExcitationOptions& options)
    : options_(options), rd_(options.reduced_channels()) {
  const std::int64_t c = options_.channels();
  // Registration order is timm's state_dict order: fc1, bn, fc2.
  fc1_weight_ = register_parameter("fc1.weight", {rd_, c, 1, 1});
  if (options_.bias()) fc1_bias_ = register_parameter("fc1.bias", {rd_});
  if (options_.norm_layer() == NormLayer::batch_norm) {
    // A fresh BatchNorm2d is the identity (weight 1, running_var 1), as in PyTorch.
    bn_weight_ = register_parameter("bn.weight", {rd_});
    bn_weight_.fill(1.0f);
    bn_bias_ = register_parameter("bn.bias", {rd_});
    bn_mean_ = register_buffer("bn.running_mean", {rd_});
    bn_var_ = register_buffer("bn.running_var", {rd_});
    bn_var_.fill(1.0f);
    register_buffer("bn.num_batches_tracked", {}, /*integer=*/true);
  }
  fc2_weight_ = register_parameter("fc2.weight", {c, rd_, 1, 1});
  if (options_.bias()) fc2_bias_ = register_parameter("fc2.bias", {c});
}

std::string SqueezeExcitation::describe() const {
  std::ostringstream out;
  out << "SqueezeExcitation(channels=" << options_.channels() << ", rd_channels=" << rd_
      << ", add_maxpool=" << (options_.add_maxpool() ? "true" : "false")
      << ", bias=" << (options_.bias() ? "true" : "false")
      << ", norm_layer=" << to_string(options_.norm_layer())
      << ", gate_layer=" << to_string(options_.gate_layer()) << ")";
  return out.str();
}

Tensor SqueezeExcitation::forward(const Tensor& x) const { return run(x, false).output; }

Attended SqueezeExcitation::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended SqueezeExcitation::run(const Tensor& x, bool keep_maps) const {
  detail::gate_input(x, options_.channels(), kWhere, "the gate averages over them");
  F::SqueezeExcitationWeights w;
  w.fc1_weight = fc1_weight_;
  w.fc2_weight = fc2_weight_;
  if (options_.bias()) {
    w.fc1_bias = fc1_bias_;
    w.fc2_bias = fc2_bias_;
  }
  if (options_.norm_layer() == NormLayer::batch_norm) {
    w.bn_weight = bn_weight_;
    w.bn_bias = bn_bias_;
    w.bn_mean = bn_mean_;
    w.bn_var = bn_var_;
  }
  F::ChannelGated r = F::squeeze_excitation(x, w, options_.add_maxpool(), options_.gate_layer());
  Attended result{r.output, {}};
  if (keep_maps) result.maps.add(maps::kAttention, r.gate);
  return result;
}

}  // namespace cvattn

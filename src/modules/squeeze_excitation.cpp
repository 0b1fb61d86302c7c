#include "cvattn/modules/squeeze_excitation.hpp"

#include <sstream>
#include <vector>

#include "cvattn/core/error.hpp"
#include "modules/detail/channel_gate.hpp"
#include "modules/detail/channel_kernels.hpp"
#include "modules/detail/key_scope.hpp"
#include "modules/detail/reduced_channels.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace cvattn {
namespace {
constexpr const char* kWhere = "SqueezeExcitation::forward";
}  // namespace

SqueezeExcitationOptions SqueezeExcitationOptions::from_state_dict(const StateDict& dict, const std::string& prefix) {
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
  const std::int64_t channels = options_.channels();
  const Tensor::Nchw s = detail::gate_input(x, channels, kWhere, "the gate averages over them");
  const std::int64_t hw = s.h * s.w;
  const std::int64_t rd = rd_;

  // Everything is allocated before the parallel regions, which must not throw; scratch goes
  // through Tensor so the allocation cap applies to it too.
  Tensor y = Tensor::empty(x.shape());
  Tensor gate = Tensor::empty({s.n, channels});
  Tensor pooled = Tensor::empty({s.n, channels});
  Tensor hidden = Tensor::empty({s.n, rd});
  std::vector<detail::BnAffine> bn;
  if (options_.norm_layer() == NormLayer::batch_norm) {
    for (std::int64_t r = 0; r < rd; ++r) {
      bn.push_back(detail::fold_batch_norm(bn_weight_[r], bn_bias_[r], bn_mean_[r], bn_var_[r]));
    }
  }

  const float* xp = x.data();
  float* yp = y.data();
  float* gp = gate.data();
  const float* w1 = fc1_weight_.data();
  const float* w2 = fc2_weight_.data();
  const float* b1 = options_.bias() ? fc1_bias_.data() : nullptr;
  const float* b2 = options_.bias() ? fc2_bias_.data() : nullptr;
  const bool add_maxpool = options_.add_maxpool();
  const GateLayer gate_layer = options_.gate_layer();

  auto pool = [&](std::int64_t n, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const float* plane = xp + (n * channels + c) * hw;
      float& out = pooled[n * channels + c];
      if (add_maxpool) {
        const detail::PlaneStats st = detail::plane_mean_max(plane, hw);
        out = 0.5f * st.mean + 0.5f * st.max;
      } else {
        out = detail::plane_mean(plane, hw);
      }
    }
  };
  auto excite = [&](std::int64_t n) {
    const float* v = pooled.data() + n * channels;
    float* z = hidden.data() + n * rd;
    for (std::int64_t r = 0; r < rd; ++r) {
      double acc = detail::dot(w1 + r * channels, v, channels);
      if (b1 != nullptr) acc += b1[r];
      float zr = static_cast<float>(acc);
      if (!bn.empty()) zr = zr * bn[r].alpha +
                            bn[r].beta;
      z[r] = zr > 0.0f ? zr : (zr == zr ? 0.0f : zr);  // ReLU, NaN kept as torch does
    }
    float* g = gp + n * channels;
    for (std::int64_t c = 0; c < channels; ++c) {
      double acc = detail::dot(w2 + c * rd, z, rd);
      if (b2 != nullptr) acc += b2[c];
      g[c] = static_cast<float>(acc);
    }
    detail::apply_gate(gate_layer, g, channels);
  };
  detail::pool_excite_scale(xp, yp, gp, s.n, channels, hw, pool, excite);

  Attended result{y, {}};
  if (keep_maps) result.maps.add(maps::kAttention, gate);
  return result;
}

}  // namespace cvattn

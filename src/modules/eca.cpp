#include "cvattn/modules/eca.hpp"

#include <cmath>
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
constexpr const char* kWhere = "Eca::forward";
}  // namespace

EcaOptions EcaOptions::from_state_dict(const StateDict& dict, const std::string& prefix) {
  if (!prefix.empty()) {
    return detail::with_key_scope(dict, prefix,
                                  [](const StateDict& d) { return from_state_dict(d); });
  }
  const char* where = "EcaOptions::from_state_dict";
  if (dict.contains("conv2.weight")) {
    const Shape& w2 = detail::require_shape(dict, "conv2.weight", {1, kAny, kAny}, where);
    CVATTN_CHECK(w2[1] >= 1 && w2[2] >= 1, ValueError, where,
                 ": 'conv2.weight' expected [1, R, k] with R, k >= 1, got ", to_string(w2));
    detail::require_shape(dict, "conv.weight", {w2[1], 1, 1}, where);
    return EcaOptions().use_mlp(true).rd_channels(w2[1]).kernel_size(w2[2]);
  }
  const Shape& w = detail::require_shape(dict, "conv.weight", {1, 1, kAny}, where);
  return EcaOptions().kernel_size(w[2]);
}

std::int64_t EcaOptions::effective_kernel_size() const {
  CVATTN_CHECK(channels_ >= 0, ValueError,
               "EcaOptions: channels must be >= 0 (0: any, kernel_size as given), got ", channels_);
  if (channels_ == 0) {
    CVATTN_CHECK(kernel_size_ >= 1 && kernel_size_ % 2 == 1 && kernel_size_ <= (1 << 24),
                 ValueError,
                 "EcaOptions: kernel_size must be odd and in [1, 2^24] (padding (k-1)/2 keeps the "
                 "length C), got ",
                 kernel_size_);
    return kernel_size_;
  }
  CVATTN_CHECK(std::isfinite(gamma_) && gamma_ != 0.0 && std::isfinite(beta_), ValueError,
               "EcaOptions: gamma must be finite and non-zero and beta finite, got gamma=", gamma_,
               ", beta=", beta_);
  // Python: int(abs(math.log(channels, 2) + beta) / gamma); math.log(x, 2) is log(x) / log(2).
  const double t =
      std::abs(std::log(static_cast<double>(channels_)) / std::log(2.0) + beta_) / gamma_;
  CVATTN_CHECK(std::abs(t) <= (1 << 24), ValueError, "EcaOptions: kernel size |log2(", channels_,
               ") + ", beta_, "| / ", gamma_, " is too large");
  std::int64_t k = static_cast<std::int64_t>(t);  // truncation toward zero, as int()
  if (k % 2 == 0) k += 1;
  return k < 3 ? 3 : k;
}

std::int64_t EcaOptions::reduced_channels() const {
  // Only the rd_ratio route needs channels (a negative rd_channels is reported as such).
  CVATTN_CHECK(rd_channels_ != 0 || channels_ >= 1, ValueError,
               "EcaOptions: use_mlp needs channels or rd_channels to size the hidden layer");
  return detail::reduced_channels("EcaOptions", channels_, rd_channels_, rd_ratio_, rd_divisor_,
                                  0.9);
}

Eca::Eca(const EcaOptions& options) : options_(options), k_(options.effective_kernel_size()) {
  if (options_.use_mlp()) {
    rd_ = options_.reduced_channels();
    conv_weight_ = register_parameter("conv.weight", {rd_, 1, 1});
    conv_bias_ = register_parameter("conv.bias", {rd_});
    conv2_weight_ = register_parameter("conv2.weight", {1, rd_, k_});
    conv2_bias_ = register_parameter("conv2.bias", {1});
  } else {
    conv_weight_ = register_parameter("conv.weight", {1, 1, k_});
  }
}

std::string Eca::describe() const {
  std::ostringstream out;
  out << "Eca(channels=";
  if (options_.channels() == 0) {
    out << "None";
  } else {
    out << options_.channels();
  }
  out << ", kernel_size=" << k_;
  if (options_.use_mlp()) out << ", use_mlp=true, rd_channels=" << rd_;
  out << ", gate_layer=" << to_string(options_.gate_layer()) << ")";
  return out.str();
}

Tensor Eca::forward(const Tensor& x) const { return run(x, false).output; }

Attended Eca::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended Eca::run(const Tensor& x, bool keep_maps) const {
  const std::int64_t want = options_.channels() == 0 ? kAny : options_.channels();
  detail::gate_input(x, want, kWhere, "the gate averages over them");
  F::EcaWeights w;
  w.conv_weight = conv_weight_;
  if (options_.use_mlp()) {
    w.conv_bias = conv_bias_;
    w.conv2_weight = conv2_weight_;
    w.conv2_bias = conv2_bias_;
  }
  F::ChannelGated r = F::efficient_channel_attention(x, w, options_.gate_layer());
  Attended result{r.output, {}};
  if (keep_maps) result.maps.add(maps::kAttention, r.gate);
  return result;
}

}  // namespace cvattn

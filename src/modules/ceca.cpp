#include "cvattn/modules/ceca.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/modules/eca.hpp"
#include "modules/detail/gate_modules.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace F = cvattn::functional;

namespace cvattn {

CecaOptions CecaOptions::from_state_dict(const StateDict& dict, const std::string& prefix) {
  const char* where = "CecaOptions::from_state_dict";
  const StateDict d = detail::scoped(dict, prefix);
  const Shape& w = detail::require_shape(d, "conv.weight", {1, 1, kAny}, where);
  if (d.contains("conv.bias")) detail::require_shape(d, "conv.bias", {1}, where);
  return CecaOptions().kernel_size(w[2]).bias(d.contains("conv.bias"));
}

std::int64_t CecaOptions::effective_kernel_size() const {
  // The rule is EcaModule's (the same lines in timm's eca.py).
  return EcaOptions(channels_)
      .kernel_size(kernel_size_)
      .gamma(gamma_)
      .beta(beta_)
      .effective_kernel_size();
}

Ceca::Ceca(const CecaOptions& options) : options_(options), k_(options.effective_kernel_size()) {
  conv_weight_ = register_parameter("conv.weight", {1, 1, k_});
  if (options_.bias()) conv_bias_ = register_parameter("conv.bias", {1});
}

std::string Ceca::describe() const {
  std::ostringstream out;
  out << "Ceca(channels=";
  if (options_.channels() == 0) {
    out << "None";
  } else {
    out << options_.channels();
  }
  out << ", kernel_size=" << k_ << ", bias=" << (options_.bias() ? "true" : "false")
      << ", gate_layer=" << to_string(options_.gate_layer()) << ")";
  return out.str();
}

Tensor Ceca::forward(const Tensor& x) const { return run(x, false).output; }

Attended Ceca::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended Ceca::run(const Tensor& x, bool keep_maps) const {
  const std::int64_t want = options_.channels() == 0 ? kAny : options_.channels();
  check_shape(x, {kAny, want, kAny, kAny}, "x", "Ceca::forward");
  const Tensor s = F::channel_pool(x);  // [N, C]
  const Tensor g = F::gate(F::circular_conv1d_channels(s, conv_weight_, conv_bias_),
                           options_.gate_layer());  // [N, C]
  Attended out{F::scale_channels(x, g), {}};
  if (keep_maps) out.maps.add(maps::kAttention, g);
  return out;
}

}  // namespace cvattn

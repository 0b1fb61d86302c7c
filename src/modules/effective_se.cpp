#include "cvattn/modules/effective_se.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/functional/linear.hpp"
#include "modules/detail/gate_modules.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace F = cvattn::functional;

namespace cvattn {

EffectiveSqueezeExcitationOptions EffectiveSqueezeExcitationOptions::from_state_dict(
    const StateDict& dict, const std::string& prefix) {
  const char* where = "EffectiveSqueezeExcitationOptions::from_state_dict";
  const StateDict d = detail::scoped(dict, prefix);
  const Shape& w = detail::require_conv1x1(d, "fc.weight", where);
  CVATTN_CHECK(w[0] == w[1], ValueError, where,
               ": 'fc.weight' expected [C, C, 1, 1] (fc maps C channels to C), got ", to_string(w));
  return EffectiveSqueezeExcitationOptions(w[0]);
}

EffectiveSqueezeExcitation::EffectiveSqueezeExcitation(
    const EffectiveSqueezeExcitationOptions& options)
    : options_(options) {
  const std::int64_t c = options_.channels();
  CVATTN_CHECK(c >= 1, ValueError, "EffectiveSqueezeExcitationOptions: channels must be >= 1, got ",
               c);
  fc_ = register_module("fc", std::make_shared<Conv2d>(Conv2dOptions(c, c, 1)));
}

std::string EffectiveSqueezeExcitation::describe() const {
  std::ostringstream out;
  out << "EffectiveSqueezeExcitation(channels=" << options_.channels()
      << ", add_maxpool=" << (options_.add_maxpool() ? "true" : "false")
      << ", gate_layer=" << to_string(options_.gate_layer()) << ")";
  return out.str();
}

Tensor EffectiveSqueezeExcitation::forward(const Tensor& x) const { return run(x, false).output; }

Attended EffectiveSqueezeExcitation::forward_with_maps(const Tensor& x) const {
  return run(x, true);
}

Attended EffectiveSqueezeExcitation::run(const Tensor& x, bool keep_maps) const {
  const std::int64_t c = options_.channels();
  check_shape(x, {kAny, c, kAny, kAny}, "x", "EffectiveSqueezeExcitation::forward");
  const Tensor s = F::channel_pool(x, options_.add_maxpool());  // [N, C]
  const Tensor g = F::gate(F::linear(s, fc_->weight().reshape({c, c}), fc_->bias()),
                           options_.gate_layer());  // [N, C]
  Attended out{F::scale_channels(x, g), {}};
  if (keep_maps) out.maps.add(maps::kAttention, g);
  return out;
}

}  // namespace cvattn

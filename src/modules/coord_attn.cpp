#include "cvattn/modules/coord_attn.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/gates.hpp"
#include "modules/detail/gate_modules.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace F = cvattn::functional;

namespace cvattn {

CoordAttnOptions CoordAttnOptions::from_state_dict(const StateDict& dict,
                                                   const std::string& prefix) {
  const char* where = "CoordAttnOptions::from_state_dict";
  const StateDict d = detail::scoped(dict, prefix);
  const Shape& w = detail::require_conv1x1(d, "conv1.weight", where);
  return CoordAttnOptions(w[1], w[0]).bias(d.contains("conv1.bias")).norm(d.has_prefix("bn1"));
}

CoordAttn::CoordAttn(const CoordAttnOptions& options) : options_(options) {
  const std::int64_t c = options_.channels(), r = options_.rd_channels();
  CVATTN_CHECK(c >= 1 && r >= 1, ValueError,
               "CoordAttnOptions: channels and rd_channels must be >= 1, got ", c, " and ", r);
  const bool bias = options_.bias();
  conv1_ = register_module("conv1", std::make_shared<Conv2d>(Conv2dOptions(c, r, 1).bias(bias)));
  if (options_.norm()) {
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(BatchNorm2dOptions(r)));
  }
  conv_h_ = register_module("conv_h", std::make_shared<Conv2d>(Conv2dOptions(r, c, 1).bias(bias)));
  conv_w_ = register_module("conv_w", std::make_shared<Conv2d>(Conv2dOptions(r, c, 1).bias(bias)));
}

std::string CoordAttn::describe() const {
  std::ostringstream out;
  out << "CoordAttn(channels=" << options_.channels() << ", rd_channels=" << options_.rd_channels()
      << ", bias=" << (options_.bias() ? "true" : "false")
      << ", norm=" << (options_.norm() ? "batch_norm" : "none")
      << ", act_layer=" << to_string(options_.act_layer())
      << ", gate_layer=" << to_string(options_.gate_layer())
      << ", has_skip=" << (options_.has_skip() ? "true" : "false") << ")";
  return out.str();
}

Tensor CoordAttn::forward(const Tensor& x) const { return run(x, false).output; }

Attended CoordAttn::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended CoordAttn::run(const Tensor& x, bool keep_maps) const {
  const std::int64_t c = options_.channels();
  check_shape(x, {kAny, c, kAny, kAny}, "x", "CoordAttn::forward");
  const auto [x_h, x_w] = F::strip_pool(x);  // [N, C, H], [N, C, W]
  // Each strip as a [N, C, L, 1] image: the 1x1 convs and BatchNorm act per position, so the
  // two strips run apart exactly as timm's concatenation does together.
  auto strip_gate = [&](const Tensor& strip, const Conv2d& conv_out) {
    const std::int64_t n = strip.dim(0), len = strip.dim(2);
    const Tensor z = F::activation(
        detail::maybe_batch_norm(bn1_, conv1_->forward(strip.reshape({n, c, len, 1}))),
        options_.act_layer());  // [N, R, L, 1]
    return F::gate(conv_out.forward(z), options_.gate_layer()).reshape({n, c, len});
  };
  const Tensor a_h = strip_gate(x_h, *conv_h_);
  const Tensor a_w = strip_gate(x_w, *conv_w_);
  Attended out{F::coord_scale(x, a_h, a_w, options_.has_skip()), {}};
  if (keep_maps) {
    out.maps.add(maps::kAttentionH, a_h);
    out.maps.add(maps::kAttentionW, a_w);
  }
  return out;
}

}  // namespace cvattn

#include "cvattn/modules/cond_conv.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/dynamic_conv.hpp"
#include "modules/detail/gate_modules.hpp"
#include "modules/detail/state_dict_shapes.hpp"
#include "modules/repr.hpp"

namespace F = cvattn::functional;

namespace cvattn {

CondConv2dOptions CondConv2dOptions::from_state_dict(const StateDict& dict,
                                                     std::int64_t in_channels, Pair2 kernel_size,
                                                     std::int64_t groups,
                                                     const std::string& prefix) {
  const char* where = "CondConv2dOptions::from_state_dict";
  const StateDict d = detail::scoped(dict, prefix);
  const Shape& w = detail::require_shape(d, "weight", {kAny, kAny}, where);
  CVATTN_CHECK(in_channels >= 1 && groups >= 1 && in_channels % groups == 0 && kernel_size.h >= 1 &&
                   kernel_size.w >= 1,
               ValueError, where, ": in_channels (", in_channels,
               ") must be a positive multiple "
               "of groups (",
               groups, ") and the kernel size positive");
  const std::int64_t per_out = in_channels / groups * kernel_size.h * kernel_size.w;
  std::int64_t co = 0;
  if (d.contains("bias")) {
    co = detail::require_shape(d, "bias", {w[0], kAny}, where)[1];
  } else {
    co = w[1] / per_out;
  }
  CVATTN_CHECK(co >= 1 && co * per_out == w[1], ValueError, where, ": 'weight' ", to_string(w),
               " does not hold K experts of Co x ", in_channels / groups, " x ", kernel_size.h,
               " x ", kernel_size.w, " (in_channels ", in_channels, ", groups ", groups,
               ", kernel_size ", kernel_size.h, "x", kernel_size.w,
               d.contains("bias") ? ", Co " + std::to_string(co) + " from 'bias'" : std::string(),
               ")");
  return CondConv2dOptions(in_channels, co, kernel_size)
      .groups(groups)
      .num_experts(w[0])
      .bias(d.contains("bias"));
}

Pair2 CondConv2dOptions::effective_padding() const {
  if (padding_) return *padding_;
  return {((stride_.h - 1) + dilation_.h * (kernel_size_.h - 1)) / 2,
          ((stride_.w - 1) + dilation_.w * (kernel_size_.w - 1)) / 2};
}

CondConv2d::CondConv2d(const CondConv2dOptions& options) : options_(options) {
  const char* who = "CondConv2dOptions";
  const std::int64_t ci = options_.in_channels(), co = options_.out_channels();
  const std::int64_t g = options_.groups(), k = options_.num_experts();
  const Pair2 ks = options_.kernel_size();
  CVATTN_CHECK(ci >= 1 && co >= 1 && g >= 1 && k >= 1 && ks.h >= 1 && ks.w >= 1, ValueError, who,
               ": in_channels, out_channels, groups, num_experts and kernel_size must be >= 1");
  CVATTN_CHECK(ci % g == 0 && co % g == 0, ValueError, who, ": groups (", g,
               ") must divide in_channels (", ci, ") and out_channels (", co, ")");
  weight_ = register_parameter("weight", {k, co * (ci / g) * ks.h * ks.w});
  if (options_.bias()) bias_ = register_parameter("bias", {k, co});
}

std::string CondConv2d::describe() const {
  std::ostringstream out;
  out << "CondConv2d(" << options_.in_channels() << ", " << options_.out_channels()
      << ", kernel_size=" << detail::tuple_repr(options_.kernel_size())
      << ", stride=" << detail::tuple_repr(options_.stride())
      << ", padding=" << detail::tuple_repr(options_.effective_padding())
      << ", dilation=" << detail::tuple_repr(options_.dilation())
      << ", groups=" << options_.groups() << ", bias=" << (options_.bias() ? "true" : "false")
      << ", num_experts=" << options_.num_experts() << ")";
  return out.str();
}

Tensor CondConv2d::forward(const Tensor& x, const Tensor& routing_weights) const {
  const char* where = "CondConv2d::forward";
  check_shape(x, {kAny, options_.in_channels(), kAny, kAny}, "x", where);
  check_shape(routing_weights, {x.dim(0), options_.num_experts()}, "routing_weights", where);
  const Pair2 ks = options_.kernel_size();
  const Tensor experts = weight_.reshape({options_.num_experts(), options_.out_channels(),
                                          options_.in_channels() / options_.groups(), ks.h, ks.w});
  return F::dynamic_conv2d(x, experts, bias_, routing_weights,
                           F::Conv2dOptions()
                               .stride(options_.stride())
                               .padding(options_.effective_padding())
                               .dilation(options_.dilation())
                               .groups(options_.groups()));
}

CondConvRoutingOptions CondConvRoutingOptions::from_state_dict(const StateDict& dict,
                                                               const std::string& prefix) {
  const char* where = "CondConvRoutingOptions::from_state_dict";
  const StateDict d = detail::scoped(dict, prefix);
  const Shape& w = detail::require_shape(d, "weight", {kAny, kAny}, where);
  return CondConvRoutingOptions(w[1], w[0]);
}

CondConvRouting::CondConvRouting(const CondConvRoutingOptions& options) : options_(options) {
  CVATTN_CHECK(options_.in_channels() >= 1 && options_.num_experts() >= 1, ValueError,
               "CondConvRoutingOptions: in_channels and num_experts must be >= 1, got ",
               options_.in_channels(), " and ", options_.num_experts());
  weight_ = register_parameter("weight", {options_.num_experts(), options_.in_channels()});
  bias_ = register_parameter("bias", {options_.num_experts()});
}

Tensor CondConvRouting::forward(const Tensor& x) const {
  return F::cond_conv_routing(x, weight_, bias_);
}

std::string CondConvRouting::describe() const {
  return "CondConvRouting(in_channels=" + std::to_string(options_.in_channels()) +
         ", num_experts=" + std::to_string(options_.num_experts()) + ")";
}

}  // namespace cvattn

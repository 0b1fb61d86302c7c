#include "cvattn/modules/dynamic_conv.hpp"

#include <cmath>
#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/dynamic_conv.hpp"
#include "modules/detail/gate_modules.hpp"
#include "modules/detail/state_dict_shapes.hpp"
#include "modules/repr.hpp"

namespace F = cvattn::functional;

namespace cvattn {

DynamicConv2dOptions DynamicConv2dOptions::from_state_dict(const StateDict& dict,
                                                           const std::string& prefix) {
  const char* where = "DynamicConv2dOptions::from_state_dict";
  const StateDict d = detail::scoped(dict, prefix);
  const Shape& w = detail::require_shape(d, "weight", {kAny, kAny, kAny, kAny, kAny}, where);
  const Shape& f1 = detail::require_conv1x1(d, "attention.fc1.weight", where);
  detail::require_shape(d, "attention.fc2.weight", {w[0], f1[0], 1, 1}, where);
  detail::require_shape(d, "attention.fc2.bias", {w[0]}, where);
  CVATTN_CHECK(w[2] >= 1 && f1[1] % w[2] == 0, ValueError, where, ": 'weight' ", to_string(w),
               " expected Ci/groups dividing the ", f1[1],
               " input channels of 'attention.fc1.weight' ", to_string(f1));
  if (d.contains("bias")) detail::require_shape(d, "bias", {w[0], w[1]}, where);
  return DynamicConv2dOptions(f1[1], w[1], Pair2(w[3], w[4]))
      .num_kernels(w[0])
      .hidden(f1[0])
      .groups(f1[1] / w[2])
      .bias(d.contains("bias"));
}

DynamicConv2d::DynamicConv2d(const DynamicConv2dOptions& options) : options_(options) {
  const char* who = "DynamicConv2dOptions";
  const std::int64_t ci = options_.in_channels(), co = options_.out_channels();
  const std::int64_t k = options_.num_kernels(), g = options_.groups();
  const Pair2 ks = options_.kernel_size();
  CVATTN_CHECK(ci >= 1 && co >= 1 && k >= 1 && g >= 1 && ks.h >= 1 && ks.w >= 1, ValueError, who,
               ": in_channels, out_channels, num_kernels, groups and kernel_size must be >= 1");
  CVATTN_CHECK(ci % g == 0 && co % g == 0, ValueError, who, ": groups (", g,
               ") must divide in_channels (", ci, ") and out_channels (", co, ")");
  CVATTN_CHECK(std::isfinite(options_.temperature()) && options_.temperature() > 0, ValueError, who,
               ": temperature must be positive and finite, got ", options_.temperature());
  CVATTN_CHECK(options_.hidden() >= 0, ValueError, who, ": hidden must be >= 0, got ",
               options_.hidden());
  hidden_ = options_.hidden() > 0 ? options_.hidden() : (ci / 4 > 0 ? ci / 4 : 1);
  fc1_weight_ = register_parameter("attention.fc1.weight", {hidden_, ci, 1, 1});
  fc2_weight_ = register_parameter("attention.fc2.weight", {k, hidden_, 1, 1});
  fc2_bias_ = register_parameter("attention.fc2.bias", {k});
  weight_ = register_parameter("weight", {k, co, ci / g, ks.h, ks.w});
  if (options_.bias()) bias_ = register_parameter("bias", {k, co});
}

std::string DynamicConv2d::describe() const {
  std::ostringstream out;
  out << "DynamicConv2d(" << options_.in_channels() << ", " << options_.out_channels()
      << ", kernel_size=" << detail::tuple_repr(options_.kernel_size())
      << ", num_kernels=" << options_.num_kernels() << ", hidden=" << hidden_
      << ", stride=" << detail::tuple_repr(options_.stride())
      << ", padding=" << detail::tuple_repr(options_.padding())
      << ", dilation=" << detail::tuple_repr(options_.dilation())
      << ", groups=" << options_.groups() << ", bias=" << (options_.bias() ? "true" : "false")
      << ", temperature=" << detail::float_repr(options_.temperature()) << ")";
  return out.str();
}

Tensor DynamicConv2d::forward(const Tensor& x) const { return run(x, false).output; }

Attended DynamicConv2d::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended DynamicConv2d::run(const Tensor& x, bool keep_maps) const {
  check_shape(x, {kAny, options_.in_channels(), kAny, kAny}, "x", "DynamicConv2d::forward");
  const Tensor pi = F::dynamic_conv_attention(x, fc1_weight_, fc2_weight_, fc2_bias_,
                                              options_.temperature());  // [N, K]
  const auto conv = F::Conv2dOptions()
                        .stride(options_.stride())
                        .padding(options_.padding())
                        .dilation(options_.dilation())
                        .groups(options_.groups());
  Attended out{F::dynamic_conv2d(x, weight_, bias_, pi, conv), {}};
  if (keep_maps) out.maps.add(maps::kAttention, pi);
  return out;
}

}  // namespace cvattn

#include "cvattn/modules/non_local.hpp"

#include <cmath>
#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/attention.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/linear.hpp"
#include "modules/detail/key_scope.hpp"
#include "modules/detail/reduced_channels.hpp"
#include "modules/detail/state_dict_shapes.hpp"
#include "modules/repr.hpp"

namespace cvattn {
namespace {

namespace F = functional;
constexpr const char* kWhere = "NonLocalAttn::forward";

}  // namespace

NonLocalAttnOptions NonLocalAttnOptions::from_state_dict(const StateDict& dict,
                                                         const std::string& prefix) {
  if (!prefix.empty()) {
    return detail::with_key_scope(dict, prefix,
                                  [](const StateDict& d) { return from_state_dict(d); });
  }
  const char* where = "NonLocalAttnOptions::from_state_dict";
  const Shape& wt = detail::require_conv1x1(dict, "t.weight", where);
  return NonLocalAttnOptions(wt[1]).rd_channels(wt[0]);
}

std::int64_t NonLocalAttnOptions::reduced_channels() const {
  CVATTN_CHECK(in_channels_ >= 1, ValueError, "NonLocalAttnOptions: in_channels must be >= 1, got ",
               in_channels_);
  // timm's NonLocalAttn keeps make_divisible's default round_limit (SE and CBAM pass 0).
  return detail::reduced_channels("NonLocalAttnOptions", in_channels_, rd_channels_, rd_ratio_,
                                  rd_divisor_, 0.9);
}

NonLocalAttn::NonLocalAttn(const NonLocalAttnOptions& options)
    : options_(options), rd_(options.reduced_channels()) {
  const std::int64_t c = options_.in_channels(), r = rd_;
  t_weight_ = register_parameter("t.weight", {r, c, 1, 1});
  t_bias_ = register_parameter("t.bias", {r});
  p_weight_ = register_parameter("p.weight", {r, c, 1, 1});
  p_bias_ = register_parameter("p.bias", {r});
  g_weight_ = register_parameter("g.weight", {r, c, 1, 1});
  g_bias_ = register_parameter("g.bias", {r});
  z_weight_ = register_parameter("z.weight", {c, r, 1, 1});
  z_bias_ = register_parameter("z.bias", {c});
  bn_weight_ = register_parameter("norm.weight", {c});  // timm zero-initialises it
  bn_bias_ = register_parameter("norm.bias", {c});
  bn_mean_ = register_buffer("norm.running_mean", {c});
  bn_var_ = register_buffer("norm.running_var", {c});
  bn_var_.fill(1.0f);
  register_buffer("norm.num_batches_tracked", {}, /*integer=*/true);
}

std::string NonLocalAttn::describe() const {
  std::ostringstream out;
  out << "NonLocalAttn(in_channels=" << options_.in_channels() << ", rd_channels=" << rd_
      << ", use_scale=" << detail::bool_repr(options_.use_scale()) << ")";
  return out.str();
}

Tensor NonLocalAttn::forward(const Tensor& x) const { return run(x, false).output; }

Attended NonLocalAttn::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended NonLocalAttn::run(const Tensor& x, bool keep_maps) const {
  const std::int64_t c = options_.in_channels(), r = rd_;
  check_shape(x, {kAny, c, kAny, kAny}, "x", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, kWhere,
               ": tensor 'x' expected H, W >= 1 (positions to attend), got ", to_string(x.shape()));
  // The 1x1 convs are linear maps of the tokens [N, H*W, C].
  const Tensor tokens = F::flatten_spatial(x);
  const Tensor t = F::linear(tokens, t_weight_.reshape({r, c}), t_bias_);  // [N, HW, R]
  const Tensor p = F::linear(tokens, p_weight_.reshape({r, c}), p_bias_);
  const Tensor g = F::linear(tokens, g_weight_.reshape({r, c}), g_bias_);
  // scale is C^-0.5 of in_channels, computed in double and rounded once (Python float).
  const double scale = options_.use_scale() ? 1.0 / std::sqrt(static_cast<double>(c)) : 1.0;
  const F::AttentionResult a = F::scaled_dot_product_attention(
      t, p, g, {}, F::SdpaOptions().scale(scale).need_weights(keep_maps));
  const Tensor z = F::unflatten_spatial(F::linear(a.output, z_weight_.reshape({c, r}), z_bias_),
                                        s.h, s.w);  // [N, C, H, W]

  // y = BN(z) + x, BN as PyTorch's CPU kernel evaluates it (z * alpha + beta).
  const Tensor y = F::batch_norm_add(z, x, bn_mean_, bn_var_, bn_weight_, bn_bias_);
  Attended result{y, {}};
  if (keep_maps) result.maps.add(maps::kAttention, a.attn_weights);
  return result;
}

}  // namespace cvattn

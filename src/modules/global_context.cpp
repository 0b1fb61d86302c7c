#include "cvattn/modules/global_context.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/core/make_divisible.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/functional/linear.hpp"
#include "cvattn/functional/normalization.hpp"
#include "modules/detail/gate_modules.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace F = cvattn::functional;

namespace cvattn {
namespace {
constexpr double kLayerNormEps = 1e-6;  // timm's LayerNorm2d default
}  // namespace

GlobalContextOptions GlobalContextOptions::from_state_dict(const StateDict& dict,
                                                           const std::string& prefix) {
  const char* where = "GlobalContextOptions::from_state_dict";
  const StateDict d = detail::scoped(dict, prefix);
  const bool add = d.has_prefix("mlp_add"), scale = d.has_prefix("mlp_scale");
  std::int64_t c = 0, r = 0;
  for (const char* mlp : {"mlp_add", "mlp_scale"}) {
    if (!d.has_prefix(mlp)) continue;
    const Shape& w = detail::require_conv1x1(d, std::string(mlp) + ".fc1.weight", where);
    CVATTN_CHECK(c == 0 || (c == w[1] && r == w[0]), ValueError, where, ": '", mlp, ".fc1.weight' ",
                 to_string(w), " disagrees with 'mlp_add.fc1.weight' [", r, ", ", c, ", 1, 1]");
    c = w[1];
    r = w[0];
  }
  const bool attn = d.has_prefix("conv_attn");
  if (attn) {
    const Shape& w = detail::require_shape(d, "conv_attn.weight", {1, kAny, 1, 1}, where);
    CVATTN_CHECK(c == 0 || c == w[1], ValueError, where, ": 'conv_attn.weight' ", to_string(w),
                 " disagrees with the MLP's ", c, " channels");
    c = w[1];
  }
  CVATTN_CHECK(c >= 1, ValueError, where,
               ": expected 'conv_attn.weight', 'mlp_add.fc1.weight' or 'mlp_scale.fc1.weight' "
               "(the weights size nothing)");
  GlobalContextOptions o(c);
  o.use_attn(attn).fuse_add(add).fuse_scale(scale);
  if (r > 0) o.rd_channels(r);
  return o;
}

GlobalContext::GlobalContext(const GlobalContextOptions& options) : options_(options) {
  const std::int64_t c = options_.channels();
  CVATTN_CHECK(c >= 1, ValueError, "GlobalContextOptions: channels must be >= 1, got ", c);
  CVATTN_CHECK(options_.rd_channels() >= 0, ValueError,
               "GlobalContextOptions: rd_channels must be >= 0 (0: from C / 8), got ",
               options_.rd_channels());
  rd_ = options_.rd_channels() > 0 ? options_.rd_channels()
                                   : make_divisible(static_cast<double>(c) / 8.0, 1, 0, 0.0);
  if (options_.use_attn()) {
    attn_weight_ = register_parameter("conv_attn.weight", {1, c, 1, 1});
    attn_bias_ = register_parameter("conv_attn.bias", {1});
  }
  if (options_.fuse_add()) add_ = register_mlp("mlp_add");
  if (options_.fuse_scale()) scale_ = register_mlp("mlp_scale");
}

GlobalContext::Mlp GlobalContext::register_mlp(const std::string& name) {
  const std::int64_t c = options_.channels();
  Mlp m;
  m.fc1_weight = register_parameter(name + ".fc1.weight", {rd_, c, 1, 1});
  m.fc1_bias = register_parameter(name + ".fc1.bias", {rd_});
  m.norm_weight = register_parameter(name + ".norm.weight", {rd_});
  m.norm_weight.fill(1.0f);
  m.norm_bias = register_parameter(name + ".norm.bias", {rd_});
  m.fc2_weight = register_parameter(name + ".fc2.weight", {c, rd_, 1, 1});
  m.fc2_bias = register_parameter(name + ".fc2.bias", {c});
  return m;
}

std::string GlobalContext::describe() const {
  std::ostringstream out;
  out << "GlobalContext(channels=" << options_.channels()
      << ", use_attn=" << (options_.use_attn() ? "true" : "false")
      << ", fuse_add=" << (options_.fuse_add() ? "true" : "false")
      << ", fuse_scale=" << (options_.fuse_scale() ? "true" : "false") << ", rd_channels=" << rd_
      << ", gate_layer=" << to_string(options_.gate_layer()) << ")";
  return out.str();
}

Tensor GlobalContext::forward(const Tensor& x) const { return run(x, false).output; }

Attended GlobalContext::forward_with_maps(const Tensor& x) const { return run(x, true); }

Tensor GlobalContext::mlp(const Mlp& m, const Tensor& v) const {
  const std::int64_t c = options_.channels();
  const Tensor h = F::linear(v, m.fc1_weight.reshape({rd_, c}), m.fc1_bias);  // [N, R]
  const Tensor z = F::relu(F::layer_norm(h, {rd_}, m.norm_weight, m.norm_bias, kLayerNormEps));
  return F::linear(z, m.fc2_weight.reshape({c, rd_}), m.fc2_bias);  // [N, C]
}

Attended GlobalContext::run(const Tensor& x, bool keep_maps) const {
  check_shape(x, {kAny, options_.channels(), kAny, kAny}, "x", "GlobalContext::forward");
  Attended out;
  Tensor context;
  if (options_.use_attn()) {
    auto [ctx, attn] = F::attention_pool(x, attn_weight_, attn_bias_);  // [N, C], [N, 1, H, W]
    context = ctx;
    if (keep_maps) out.maps.add(maps::kAttention, attn);
  } else {
    context = F::channel_pool(x);
  }
  Tensor g, a;
  if (options_.fuse_scale()) {
    g = F::gate(mlp(scale_, context), options_.gate_layer());
    if (keep_maps) out.maps.add(maps::kChannelAttention, g);
  }
  if (options_.fuse_add()) a = mlp(add_, context);
  out.output = g.defined() || a.defined() ? F::scale_channels(x, g, a) : x;
  return out;
}

}  // namespace cvattn

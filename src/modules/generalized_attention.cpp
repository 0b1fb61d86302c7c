#include "cvattn/modules/generalized_attention.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "modules/detail/state_dict_shapes.hpp"
#include "modules/repr.hpp"

namespace cvattn {
namespace {
namespace F = functional;
constexpr const char* kWhere = "GeneralizedAttention::forward";
constexpr const char* kWho = "GeneralizedAttentionOptions";
}  // namespace

GeneralizedAttentionOptions GeneralizedAttentionOptions::from_state_dict(
    const StateDict& dict, const std::string& prefix) {
  const char* where = "GeneralizedAttentionOptions::from_state_dict";
  const std::string p = detail::key_prefix(prefix);
  const Shape& v = detail::require_conv1x1(dict, p + "value_conv.weight", where);
  GeneralizedAttentionOptions o(v[1]);
  if (dict.contains(p + "appr_geom_fc_x.weight")) {
    const Shape& fx = detail::require_shape(dict, p + "appr_geom_fc_x.weight", {v[0], kAny}, where);
    o.position_embedding_dim(2 * fx[1]);
  }
  return o;
}

std::int64_t GeneralizedAttentionOptions::resolved_position_embedding_dim() const {
  return position_embedding_dim_ > 0 ? position_embedding_dim_ : in_channels_;
}

F::GeneralizedAttentionOptions GeneralizedAttentionOptions::functional_options() const {
  CVATTN_CHECK(in_channels_ >= 1, ValueError, kWho, ": in_channels must be >= 1, got ",
               in_channels_);
  CVATTN_CHECK(num_heads_ >= 1 && num_heads_ <= in_channels_, ValueError, kWho,
               ": num_heads must be in [1, in_channels ", in_channels_, "], got ", num_heads_);
  CVATTN_CHECK(kv_stride_ >= 1 && q_stride_ >= 1, ValueError, kWho,
               ": kv_stride and q_stride must be >= 1, got ", kv_stride_, " and ", q_stride_);
  const F::AttentionTerms t = F::parse_attention_type(attention_type_);
  if (t[1] || t[3]) {
    const std::int64_t pd = resolved_position_embedding_dim();
    CVATTN_CHECK(pd % 4 == 0, ValueError, kWho, ": position_embedding_dim ", pd,
                 " must be a multiple of 4 (mmcv's sin/cos halves of feat_dim/4 frequencies must "
                 "fill its Linear(feat_dim/2, ...))");
  }
  // mmcv builds the constraint map only for 256 (84 x 84) and 512 (42 x 42) input channels;
  // cvattn keeps those limits there and needs none for other widths.
  const std::int64_t max_len = in_channels_ == 256 ? 84 : in_channels_ == 512 ? 42 : 0;
  return F::GeneralizedAttentionOptions()
      .num_heads(num_heads_)
      .attention_type(t)
      .kv_stride(kv_stride_)
      .q_stride(q_stride_)
      .position_magnitude(position_magnitude_)
      .spatial_range(spatial_range_)
      .max_len(max_len);
}

GeneralizedAttention::GeneralizedAttention(const GeneralizedAttentionOptions& options)
    : options_(options), kernel_(options.functional_options()) {
  const std::int64_t c = options_.in_channels(),
                     hc = c / options_.num_heads() * options_.num_heads();
  const F::AttentionTerms t = kernel_.attention_type();
  // Registration order is mmcv's.
  if (t[0] || t[1]) w_.query_weight = register_parameter("query_conv.weight", {hc, c, 1, 1});
  if (t[0] || t[2]) w_.key_weight = register_parameter("key_conv.weight", {hc, c, 1, 1});
  w_.value_weight = register_parameter("value_conv.weight", {hc, c, 1, 1});
  if (t[1] || t[3]) {
    const std::int64_t half = options_.resolved_position_embedding_dim() / 2;
    w_.fc_x = register_parameter("appr_geom_fc_x.weight", {hc, half});
    w_.fc_y = register_parameter("appr_geom_fc_y.weight", {hc, half});
  }
  if (t[2]) w_.appr_bias = register_parameter("appr_bias", {hc});
  if (t[3]) w_.geom_bias = register_parameter("geom_bias", {hc});
  w_.proj_weight = register_parameter("proj_conv.weight", {c, hc, 1, 1});
  w_.proj_bias = register_parameter("proj_conv.bias", {c});
  w_.gamma = register_parameter("gamma", {1});
}

std::string GeneralizedAttention::describe() const {
  std::ostringstream out;
  out << "GeneralizedAttention(in_channels=" << options_.in_channels()
      << ", spatial_range=" << options_.spatial_range() << ", num_heads=" << options_.num_heads()
      << ", position_embedding_dim=" << options_.resolved_position_embedding_dim()
      << ", position_magnitude=" << options_.position_magnitude()
      << ", kv_stride=" << options_.kv_stride() << ", q_stride=" << options_.q_stride()
      << ", attention_type='" << options_.attention_type() << "')";
  return out.str();
}

Tensor GeneralizedAttention::forward(const Tensor& x) const { return run(x, false).output; }

Attended GeneralizedAttention::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended GeneralizedAttention::run(const Tensor& x, bool keep_maps) const {
  check_shape(x, {kAny, options_.in_channels(), kAny, kAny}, "x", kWhere);
  F::GeneralizedAttentionOptions o = kernel_;
  const F::AttentionResult a = F::generalized_attention(x, w_, o.need_weights(keep_maps));
  Attended result{a.output, {}};
  if (keep_maps) result.maps.add(maps::kAttention, a.attn_weights);
  return result;
}

}  // namespace cvattn

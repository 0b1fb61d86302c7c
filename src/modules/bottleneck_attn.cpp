#include "cvattn/modules/bottleneck_attn.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/attention.hpp"
#include "cvattn/functional/linear.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/functional/rel_pos_attention.hpp"
#include "modules/detail/spatial_dims.hpp"
#include "modules/repr.hpp"

namespace cvattn {
namespace {
namespace F = functional;
constexpr const char* kWhere = "BottleneckAttn::forward";
constexpr const char* kWho = "BottleneckAttnOptions";
}  // namespace

BottleneckAttnOptions BottleneckAttnOptions::from_state_dict(const StateDict& dict,
                                                             const std::string& prefix) {
  const char* where = "BottleneckAttnOptions::from_state_dict";
  const std::string p = detail::key_prefix(prefix);
  const Shape& w = detail::require_conv1x1(dict, p + "qkv.weight", where);
  const Shape& hr = detail::require_shape(dict, p + "pos_embed.height_rel", {kAny, kAny}, where);
  const Shape& wr = detail::require_shape(dict, p + "pos_embed.width_rel", {kAny, hr[1]}, where);
  CVATTN_CHECK(hr[0] % 2 == 1 && wr[0] % 2 == 1 && hr[1] >= 1, ValueError, where, ": '", p,
               "pos_embed.height_rel' ", to_string(hr), " and '", p, "pos_embed.width_rel' ",
               to_string(wr), " must have 2*H-1 and 2*W-1 rows");
  return BottleneckAttnOptions(w[1], Pair2((hr[0] + 1) / 2, (wr[0] + 1) / 2))
      .dim_head(hr[1])
      .qkv_bias(dict.contains(p + "qkv.bias"))
      .qkv_channels(w[0]);
}

BottleneckAttnOptions::Dims BottleneckAttnOptions::dims() const {
  CVATTN_CHECK(dim_ >= 1, ValueError, kWho, ": dim must be >= 1, got ", dim_);
  CVATTN_CHECK(feat_size_.h >= 1 && feat_size_.w >= 1, ValueError, kWho,
               ": feat_size must be positive, got (", feat_size_.h, ", ", feat_size_.w, ")");
  CVATTN_CHECK(stride_ == 1 || stride_ == 2, ValueError, kWho, ": stride must be 1 or 2, got ",
               stride_);
  CVATTN_CHECK(num_heads_ >= 1, ValueError, kWho, ": num_heads must be >= 1, got ", num_heads_);
  std::int64_t out = dim_out_ > 0 ? dim_out_ : dim_;
  if (qkv_channels_ > 0) {
    CVATTN_CHECK(dim_head_ > 0, ValueError, kWho, ": qkv_channels needs dim_head");
    const std::int64_t from_weights = qkv_channels_ - 2 * num_heads_ * dim_head_;
    CVATTN_CHECK(from_weights >= 1 && from_weights % num_heads_ == 0 &&
                     (dim_out_ == 0 || dim_out_ == from_weights),
                 ValueError, kWho, ": qkv.weight has ", qkv_channels_,
                 " output channels, which is not 2 * num_heads (", num_heads_, ") * dim_head (",
                 dim_head_, ") + dim_out",
                 dim_out_ > 0 ? " = " + std::to_string(dim_out_) : std::string(),
                 " with dim_out a multiple of num_heads");
    out = from_weights;
  }
  const std::int64_t qk = detail::qk_head_width(kWho, out, num_heads_, dim_head_, qk_ratio_);
  return {out, qk, out / num_heads_};
}

BottleneckAttn::BottleneckAttn(const BottleneckAttnOptions& options)
    : options_(options), dims_(options.dims()) {
  const std::int64_t heads = options_.num_heads();
  const Pair2 fs = options_.feat_size();
  qkv_weight_ = register_parameter(
      "qkv.weight", {2 * heads * dims_.dim_head_qk + dims_.dim_out, options_.dim(), 1, 1});
  if (options_.qkv_bias()) qkv_bias_ = register_parameter("qkv.bias", {qkv_weight_.dim(0)});
  height_rel_ = register_parameter("pos_embed.height_rel", {2 * fs.h - 1, dims_.dim_head_qk});
  width_rel_ = register_parameter("pos_embed.width_rel", {2 * fs.w - 1, dims_.dim_head_qk});
}

std::string BottleneckAttn::describe() const {
  std::ostringstream out;
  out << "BottleneckAttn(dim=" << options_.dim() << ", dim_out=" << dims_.dim_out
      << ", feat_size=" << detail::tuple_repr(options_.feat_size())
      << ", stride=" << options_.stride() << ", num_heads=" << options_.num_heads()
      << ", dim_head=" << dims_.dim_head_qk
      << ", qkv_bias=" << detail::bool_repr(options_.qkv_bias())
      << ", scale_pos_embed=" << detail::bool_repr(options_.scale_pos_embed()) << ")";
  return out.str();
}

Tensor BottleneckAttn::forward(const Tensor& x) const { return run(x, false).output; }

Attended BottleneckAttn::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended BottleneckAttn::run(const Tensor& x, bool keep_maps) const {
  const Pair2 fs = options_.feat_size();
  check_shape(x, {kAny, options_.dim(), fs.h, fs.w}, "x", kWhere);
  const std::int64_t heads = options_.num_heads(), qk = heads * dims_.dim_head_qk;
  const Tensor w = qkv_weight_.reshape({qkv_weight_.dim(0), options_.dim()});
  const Tensor tokens = F::flatten_spatial(x);
  auto project = [&](std::int64_t begin, std::int64_t end) {
    return F::linear(tokens, w.slice0(begin, end),
                     qkv_bias_.defined() ? qkv_bias_.slice0(begin, end) : Tensor());
  };
  const Tensor q = project(0, qk);
  const Tensor k = project(qk, 2 * qk);
  const Tensor v = project(2 * qk, 2 * qk + dims_.dim_out);
  const F::AttentionResult a =
      F::rel_pos_self_attention(q, k, v, height_rel_, width_rel_, fs,
                                F::RelPosAttentionOptions()
                                    .num_heads(heads)
                                    .scale_pos_embed(options_.scale_pos_embed())
                                    .need_weights(keep_maps));
  Tensor y = F::unflatten_spatial(a.output, fs.h, fs.w);
  if (options_.stride() == 2) y = F::avg_pool2d(y, F::AvgPool2dOptions(Pair2(2)));
  Attended result{y, {}};
  if (keep_maps) result.maps.add(maps::kAttention, a.attn_weights);
  return result;
}

}  // namespace cvattn

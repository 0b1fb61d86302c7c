#include "cvattn/modules/halo_attn.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/functional/rel_pos_attention.hpp"
#include "modules/detail/spatial_dims.hpp"
#include "modules/repr.hpp"

namespace cvattn {
namespace {
namespace F = functional;
constexpr const char* kWhere = "HaloAttn::forward";
constexpr const char* kWho = "HaloAttnOptions";
}  // namespace

HaloAttnOptions HaloAttnOptions::from_state_dict(const StateDict& dict, const std::string& prefix) {
  const char* where = "HaloAttnOptions::from_state_dict";
  const std::string p = detail::key_prefix(prefix);
  const Shape& q = detail::require_conv1x1(dict, p + "q.weight", where);
  const Shape& kv = detail::require_shape(dict, p + "kv.weight", {kAny, q[1], 1, 1}, where);
  const Shape& hr = detail::require_shape(dict, p + "pos_embed.height_rel", {kAny, kAny}, where);
  (void)detail::require_shape(dict, p + "pos_embed.width_rel", hr, where);
  CVATTN_CHECK(hr[1] >= 1 && q[0] % hr[1] == 0 && kv[0] > q[0], ValueError, where, ": '", p,
               "q.weight' ", to_string(q), ", '", p, "kv.weight' ", to_string(kv), " and '", p,
               "pos_embed.height_rel' ", to_string(hr),
               " do not fit num_heads * dim_head query channels and more key/value channels");
  return HaloAttnOptions(q[1])
      .dim_head(hr[1])
      .num_heads(q[0] / hr[1])
      .dim_out(kv[0] - q[0])
      .qkv_bias(dict.contains(p + "q.bias") || dict.contains(p + "kv.bias"));
}

HaloAttnOptions::Dims HaloAttnOptions::dims() const {
  CVATTN_CHECK(dim_ >= 1, ValueError, kWho, ": dim must be >= 1, got ", dim_);
  CVATTN_CHECK(stride_ == 1 || stride_ == 2, ValueError, kWho, ": stride must be 1 or 2, got ",
               stride_);
  CVATTN_CHECK(block_size_ >= 1 && halo_size_ >= 0, ValueError, kWho,
               ": need block_size >= 1 and halo_size >= 0, got ", block_size_, " and ", halo_size_);
  const std::int64_t out = dim_out_ > 0 ? dim_out_ : dim_;
  const std::int64_t qk = detail::qk_head_width(kWho, out, num_heads_, dim_head_, qk_ratio_);
  Dims d{out, qk, out / num_heads_, 1, block_size_, block_size_ + 2 * halo_size_, false};
  if (stride_ > 1) {
    d.avg_pool = avg_down_ || block_size_ % stride_ != 0;
    d.block_stride = d.avg_pool ? 1 : stride_;
    d.block_size_ds = block_size_ / d.block_stride;
  }
  return d;
}

HaloAttn::HaloAttn(const HaloAttnOptions& options) : options_(options), dims_(options.dims()) {
  const std::int64_t heads = options_.num_heads(), qk = heads * dims_.dim_head_qk;
  q_weight_ = register_parameter("q.weight", {qk, options_.dim(), 1, 1});
  if (options_.qkv_bias()) q_bias_ = register_parameter("q.bias", {qk});
  kv_weight_ = register_parameter("kv.weight", {qk + dims_.dim_out, options_.dim(), 1, 1});
  if (options_.qkv_bias()) kv_bias_ = register_parameter("kv.bias", {qk + dims_.dim_out});
  height_rel_ =
      register_parameter("pos_embed.height_rel", {2 * dims_.win_size - 1, dims_.dim_head_qk});
  width_rel_ =
      register_parameter("pos_embed.width_rel", {2 * dims_.win_size - 1, dims_.dim_head_qk});
}

std::string HaloAttn::describe() const {
  std::ostringstream out;
  out << "HaloAttn(dim=" << options_.dim() << ", dim_out=" << dims_.dim_out
      << ", stride=" << options_.stride() << ", num_heads=" << options_.num_heads()
      << ", dim_head=" << dims_.dim_head_qk << ", block_size=" << options_.block_size()
      << ", halo_size=" << options_.halo_size()
      << ", qkv_bias=" << detail::bool_repr(options_.qkv_bias())
      << ", avg_down=" << detail::bool_repr(options_.avg_down())
      << ", scale_pos_embed=" << detail::bool_repr(options_.scale_pos_embed()) << ")";
  return out.str();
}

Tensor HaloAttn::forward(const Tensor& x) const { return run(x, false).output; }

Attended HaloAttn::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended HaloAttn::run(const Tensor& x, bool keep_maps) const {
  check_shape(x, {kAny, options_.dim(), kAny, kAny}, "x", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  const std::int64_t bs = options_.block_size();
  CVATTN_CHECK(s.h >= bs && s.w >= bs && s.h % bs == 0 && s.w % bs == 0, ShapeError, kWhere,
               ": tensor 'x' ", to_string(x.shape()),
               " must have H and W positive multiples of block_size ", bs);
  const Tensor q =
      F::conv2d(x, q_weight_, q_bias_, F::Conv2dOptions().stride(Pair2(dims_.block_stride)));
  const Tensor kv = F::conv2d(x, kv_weight_, kv_bias_);
  const F::AttentionResult a = F::halo_attention(q, kv, height_rel_, width_rel_,
                                                 F::HaloAttentionOptions()
                                                     .num_heads(options_.num_heads())
                                                     .block_size(bs)
                                                     .halo_size(options_.halo_size())
                                                     .scale_pos_embed(options_.scale_pos_embed())
                                                     .need_weights(keep_maps));
  Tensor y = a.output;
  if (dims_.avg_pool) y = F::avg_pool2d(y, F::AvgPool2dOptions(Pair2(2)));
  Attended result{y, {}};
  if (keep_maps) result.maps.add(maps::kAttention, a.attn_weights);
  return result;
}

}  // namespace cvattn

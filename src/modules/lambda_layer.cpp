#include "cvattn/modules/lambda_layer.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/functional/rel_pos_attention.hpp"
#include "modules/detail/spatial_dims.hpp"
#include "modules/repr.hpp"

namespace cvattn {
namespace {
namespace F = functional;
constexpr const char* kWhere = "LambdaLayer::forward";
constexpr const char* kWho = "LambdaLayerOptions";
}  // namespace

LambdaLayerOptions LambdaLayerOptions::from_state_dict(const StateDict& dict,
                                                       const std::string& prefix) {
  const char* where = "LambdaLayerOptions::from_state_dict";
  const std::string p = detail::key_prefix(prefix);
  const Shape& w = detail::require_conv1x1(dict, p + "qkv.weight", where);
  const Shape& nq = detail::require_shape(dict, p + "norm_q.running_mean", {kAny}, where);
  const Shape& nv = detail::require_shape(dict, p + "norm_v.running_mean", {kAny}, where);
  LambdaLayerOptions o(w[1]);
  std::int64_t k = 0;
  if (dict.contains(p + "pos_emb")) {
    const Shape& e = detail::require_shape(dict, p + "pos_emb", {kAny, kAny, kAny}, where);
    CVATTN_CHECK(e[0] % 2 == 1 && e[1] % 2 == 1 && e[2] >= 1, ValueError, where, ": '", p,
                 "pos_emb' expected [2H-1, 2W-1, K], got ", to_string(e));
    k = e[2];
    o.r(0).feat_size(Pair2((e[0] + 1) / 2, (e[1] + 1) / 2));
  } else {
    const Shape& c =
        detail::require_shape(dict, p + "conv_lambda.weight", {kAny, 1, kAny, kAny, 1}, where);
    CVATTN_CHECK(c[0] >= 1 && c[2] == c[3] && c[2] % 2 == 1, ValueError, where, ": '", p,
                 "conv_lambda.weight' expected [K, 1, r, r, 1] with r odd, got ", to_string(c));
    k = c[0];
    o.r(c[2]);
  }
  CVATTN_CHECK(nq[0] >= k && nq[0] % k == 0 && nv[0] >= 1 && w[0] == nq[0] + k + nv[0], ValueError,
               where, ": '", p, "qkv.weight' ", to_string(w), ", '", p, "norm_q.running_mean' ",
               to_string(nq), " and '", p, "norm_v.running_mean' ", to_string(nv),
               " do not fit heads*K + K + V channels with K = ", k);
  return o.dim_head(k)
      .num_heads(nq[0] / k)
      .dim_out(nq[0] / k * nv[0])
      .qkv_bias(dict.contains(p + "qkv.bias"));
}

LambdaLayerOptions::Dims LambdaLayerOptions::dims() const {
  CVATTN_CHECK(dim_ >= 1, ValueError, kWho, ": dim must be >= 1, got ", dim_);
  CVATTN_CHECK(stride_ == 1 || stride_ == 2, ValueError, kWho, ": stride must be 1 or 2, got ",
               stride_);
  const std::int64_t out = dim_out_ > 0 ? dim_out_ : dim_;
  CVATTN_CHECK(out == dim_, ValueError, kWho, ": dim_out ", out, " must equal dim ", dim_,
               " (timm reshapes the output to the input's channels)");
  const std::int64_t qk = detail::qk_head_width(kWho, out, num_heads_, dim_head_, qk_ratio_);
  CVATTN_CHECK(r_ == 0 || (r_ >= 1 && r_ % 2 == 1), ValueError, kWho,
               ": r must be odd (or 0 for relative position embeddings), got ", r_);
  CVATTN_CHECK(r_ > 0 || (feat_size_.h >= 1 && feat_size_.w >= 1), ValueError, kWho,
               ": feat_size is required when r == 0 (relative position embeddings)");
  return {out, qk, out / num_heads_};
}

LambdaLayer::LambdaLayer(const LambdaLayerOptions& options)
    : options_(options), dims_(options.dims()) {
  const std::int64_t hk = options_.num_heads() * dims_.dim_qk, k = dims_.dim_qk, v = dims_.dim_v;
  qkv_weight_ = register_parameter("qkv.weight", {hk + k + v, options_.dim(), 1, 1});
  if (options_.qkv_bias()) qkv_bias_ = register_parameter("qkv.bias", {hk + k + v});
  auto bn = [&](const std::string& name, std::int64_t c, Tensor& w, Tensor& b, Tensor& m,
                Tensor& var) {
    w = register_parameter(name + ".weight", {c});
    w.fill(1.0f);
    b = register_parameter(name + ".bias", {c});
    m = register_buffer(name + ".running_mean", {c});
    var = register_buffer(name + ".running_var", {c});
    var.fill(1.0f);
    register_buffer(name + ".num_batches_tracked", {}, /*integer=*/true);
  };
  bn("norm_q", hk, q_weight_, q_bias_, q_mean_, q_var_);
  bn("norm_v", v, v_weight_, v_bias_, v_mean_, v_var_);
  if (options_.r() > 0) {
    const std::int64_t r = options_.r();
    conv_weight_ = register_parameter("conv_lambda.weight", {k, 1, r, r, 1});
    conv_bias_ = register_parameter("conv_lambda.bias", {k});
  } else {
    const Pair2 fs = options_.feat_size();
    pos_emb_ = register_parameter("pos_emb", {2 * fs.h - 1, 2 * fs.w - 1, k});
  }
}

std::string LambdaLayer::describe() const {
  std::ostringstream out;
  out << "LambdaLayer(dim=" << options_.dim() << ", num_heads=" << options_.num_heads()
      << ", dim_head=" << dims_.dim_qk << ", dim_v=" << dims_.dim_v;
  if (options_.r() > 0) {
    out << ", r=" << options_.r();
  } else {
    out << ", feat_size=" << detail::tuple_repr(options_.feat_size());
  }
  out << ", stride=" << options_.stride() << ", qkv_bias=" << detail::bool_repr(options_.qkv_bias())
      << ")";
  return out.str();
}

Attended LambdaLayer::forward_with_maps(const Tensor& x) const { return {forward(x), {}}; }

Tensor LambdaLayer::forward(const Tensor& x) const {
  check_shape(x, {kAny, options_.dim(), kAny, kAny}, "x", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, kWhere, ": tensor 'x' expected H, W >= 1, got ",
               to_string(x.shape()));
  if (options_.r() == 0) {
    const Pair2 fs = options_.feat_size();
    CVATTN_CHECK(s.h == fs.h && s.w == fs.w, ShapeError, kWhere, ": tensor 'x' ",
                 to_string(x.shape()), " must have the feat_size (", fs.h, ", ", fs.w,
                 ") the relative embeddings were made for");
  }
  const std::int64_t hk = options_.num_heads() * dims_.dim_qk, k = dims_.dim_qk, v = dims_.dim_v;
  auto project = [&](std::int64_t begin, std::int64_t end) {
    return F::conv2d(x, qkv_weight_.slice0(begin, end),
                     qkv_bias_.defined() ? qkv_bias_.slice0(begin, end) : Tensor());
  };
  const Tensor q = F::batch_norm(project(0, hk), q_mean_, q_var_, q_weight_, q_bias_);
  const Tensor kk = project(hk, hk + k);
  const Tensor vv = F::batch_norm(project(hk + k, hk + k + v), v_mean_, v_var_, v_weight_, v_bias_);
  Tensor y = options_.r() > 0 ? F::lambda_conv_attention(q, kk, vv, conv_weight_, conv_bias_)
                              : F::lambda_rel_pos_attention(q, kk, vv, pos_emb_);
  if (options_.stride() == 2) y = F::avg_pool2d(y, F::AvgPool2dOptions(Pair2(2)));
  return y;
}

}  // namespace cvattn

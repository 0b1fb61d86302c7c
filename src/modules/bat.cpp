#include "cvattn/modules/bat.hpp"

#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/bilinear_attention.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/pooling.hpp"
#include "modules/detail/reduced_channels.hpp"
#include "modules/detail/state_dict_shapes.hpp"
#include "modules/repr.hpp"

namespace cvattn {
namespace {
namespace F = functional;
constexpr const char* kWhere = "BatNonLocalAttn::forward";

// sigmoid(v) viewed [N, G, b, b], then divided by its sums over `axis` (3: rows, 2: columns).
Tensor normalised_gate(const Tensor& logits, std::int64_t g, std::int64_t b, int axis) {
  Tensor m = F::sigmoid(logits).reshape({logits.dim(0), g, b, b});
  float* d = m.data();
  for (std::int64_t mat = 0; mat < logits.dim(0) * g; ++mat) {
    float* a = d + mat * b * b;
    for (std::int64_t i = 0; i < b; ++i) {
      float sum = 0.0f;
      for (std::int64_t j = 0; j < b; ++j) sum += axis == 3 ? a[i * b + j] : a[j * b + i];
      for (std::int64_t j = 0; j < b; ++j) (axis == 3 ? a[i * b + j] : a[j * b + i]) /= sum;
    }
  }
  return m;
}

}  // namespace

BatNonLocalAttnOptions BatNonLocalAttnOptions::from_state_dict(const StateDict& dict,
                                                               const std::string& prefix) {
  const char* where = "BatNonLocalAttnOptions::from_state_dict";
  const std::string p = detail::key_prefix(prefix);
  const Shape& c1 = detail::require_conv1x1(dict, p + "conv1.conv.weight", where);
  const Shape& g =
      detail::require_shape(dict, p + "ba.conv1.conv.weight", {kAny, c1[0], 1, 1}, where);
  const Shape& cp =
      detail::require_shape(dict, p + "ba.conv_p.weight", {kAny, g[0], kAny, 1}, where);
  CVATTN_CHECK(g[0] >= 1 && cp[2] >= 1 && cp[0] == cp[2] * cp[2] * g[0], ValueError, where, ": '",
               p, "ba.conv_p.weight' expected [b*b*G, G, b, 1] with G = ", g[0], ", got ",
               to_string(cp));
  return BatNonLocalAttnOptions(c1[1]).rd_channels(c1[0]).groups(g[0]).block_size(cp[2]);
}

std::int64_t BatNonLocalAttnOptions::reduced_channels() const {
  CVATTN_CHECK(in_channels_ >= 1, ValueError,
               "BatNonLocalAttnOptions: in_channels must be >= 1, "
               "got ",
               in_channels_);
  CVATTN_CHECK(block_size_ >= 1 && groups_ >= 1, ValueError,
               "BatNonLocalAttnOptions: block_size and groups must be >= 1, got ", block_size_,
               " and ", groups_);
  const std::int64_t rd = detail::reduced_channels("BatNonLocalAttnOptions", in_channels_,
                                                   rd_channels_, rd_ratio_, rd_divisor_, 0.9);
  CVATTN_CHECK(rd % groups_ == 0, ValueError, "BatNonLocalAttnOptions: the reduced width ", rd,
               " must be a multiple of groups ", groups_);
  return rd;
}

BatNonLocalAttn::ConvNormAct BatNonLocalAttn::register_cna(const std::string& name,
                                                           const Shape& weight_shape) {
  ConvNormAct c;
  const std::int64_t out = weight_shape[0];
  c.weight = register_parameter(name + ".conv.weight", weight_shape);
  c.bn_weight = register_parameter(name + ".bn.weight", {out});
  c.bn_weight.fill(1.0f);
  c.bn_bias = register_parameter(name + ".bn.bias", {out});
  c.bn_mean = register_buffer(name + ".bn.running_mean", {out});
  c.bn_var = register_buffer(name + ".bn.running_var", {out});
  c.bn_var.fill(1.0f);
  register_buffer(name + ".bn.num_batches_tracked", {}, /*integer=*/true);
  return c;
}

BatNonLocalAttn::BatNonLocalAttn(const BatNonLocalAttnOptions& options)
    : options_(options), rd_(options.reduced_channels()) {
  const std::int64_t c = options_.in_channels(), g = options_.groups(), b = options_.block_size();
  conv1_ = register_cna("conv1", {rd_, c, 1, 1});
  ba_conv1_ = register_cna("ba.conv1", {g, rd_, 1, 1});
  conv_p_weight_ = register_parameter("ba.conv_p.weight", {b * b * g, g, b, 1});
  conv_p_bias_ = register_parameter("ba.conv_p.bias", {b * b * g});
  conv_q_weight_ = register_parameter("ba.conv_q.weight", {b * b * g, g, 1, b});
  conv_q_bias_ = register_parameter("ba.conv_q.bias", {b * b * g});
  ba_conv2_ = register_cna("ba.conv2", {rd_, rd_, 1, 1});
  conv2_ = register_cna("conv2", {c, rd_, 1, 1});
}

std::string BatNonLocalAttn::describe() const {
  std::ostringstream out;
  out << "BatNonLocalAttn(in_channels=" << options_.in_channels() << ", rd_channels=" << rd_
      << ", block_size=" << options_.block_size() << ", groups=" << options_.groups() << ")";
  return out.str();
}

Tensor BatNonLocalAttn::run_cna(const ConvNormAct& c, const Tensor& x) {
  return F::relu(
      F::batch_norm(F::conv2d(x, c.weight), c.bn_mean, c.bn_var, c.bn_weight, c.bn_bias));
}

Tensor BatNonLocalAttn::forward(const Tensor& x) const { return run(x, false).output; }

Attended BatNonLocalAttn::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended BatNonLocalAttn::run(const Tensor& x, bool keep_maps) const {
  check_shape(x, {kAny, options_.in_channels(), kAny, kAny}, "x", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  const std::int64_t b = options_.block_size(), g = options_.groups();
  CVATTN_CHECK(s.h >= b && s.w >= b && s.h % b == 0 && s.w % b == 0, ShapeError, kWhere,
               ": tensor 'x' ", to_string(x.shape()),
               " must have H and W positive multiples of block_size ", b);
  const Tensor xl = run_cna(conv1_, x);
  const Tensor a = run_cna(ba_conv1_, xl);
  const Tensor p = normalised_gate(
      F::conv2d(F::adaptive_max_pool2d(a, Pair2(b, 1)), conv_p_weight_, conv_p_bias_), g, b, 3);
  const Tensor q = normalised_gate(
      F::conv2d(F::adaptive_max_pool2d(a, Pair2(1, b)), conv_q_weight_, conv_q_bias_), g, b, 2);
  const Tensor t = run_cna(ba_conv2_, F::bilinear_attn_transform(xl, p, q));
  const Tensor z = run_cna(conv2_, t);
  Tensor y = Tensor::empty(x.shape());
  for (std::int64_t i = 0; i < y.numel(); ++i) y[i] = z[i] + x[i];
  Attended result{y, {}};
  if (keep_maps) {
    result.maps.add(maps::kAttentionP, p);
    result.maps.add(maps::kAttentionQ, q);
  }
  return result;
}

}  // namespace cvattn

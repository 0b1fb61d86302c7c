#include "cvattn/functional/dynamic_conv.hpp"

#include <algorithm>
#include <cmath>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/functional/linear.hpp"
#include "functional/detail/elementwise_kernels.hpp"

namespace cvattn::functional {

Tensor aggregate_experts(const Tensor& routing, const Tensor& experts) {
  constexpr const char* kWhere = "aggregate_experts";
  check_rank(routing, 2, "routing", kWhere);
  check_defined(experts, "experts", kWhere);
  CVATTN_CHECK(
      experts.rank() >= 1 && experts.rank() < Tensor::kMaxRank && experts.dim(0) == routing.dim(1),
      ShapeError, kWhere, ": tensor 'experts' expected [", routing.dim(1),
      ", ...] (K from 'routing' ", to_string(routing.shape()), "), got ",
      to_string(experts.shape()));
  const std::int64_t n = routing.dim(0), k = routing.dim(1);
  const std::int64_t per = k > 0 ? experts.numel() / k : 0;
  // routing [N, K] x experts [K, P]: linear with the experts as a transposed weight is a copy,
  // so the products run here, P-contiguous, in blocks of columns spread over the threads (N is
  // often 1 at inference).
  Shape shape = experts.shape();
  shape[0] = n;
  if (k == 0) return Tensor::zeros(shape);  // no experts: an empty sum
  Tensor out = Tensor::empty(shape);
  const float* r = routing.data();
  const float* e = experts.data();
  float* o = out.data();
  constexpr std::int64_t kBlock = 4096;
  const std::int64_t blocks = (per + kBlock - 1) / kBlock;
  cvattn::detail::parallel_for(n * blocks, [&](std::int64_t t) {
    const std::int64_t i = t / blocks;
    const std::int64_t p0 = (t % blocks) * kBlock;
    cvattn::detail::weighted_sum_rows(e + p0, k, per, r + i * k, o + i * per + p0,
                                      std::min(kBlock, per - p0));
  });
  return out;
}

Tensor dynamic_conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Tensor& routing, const Conv2dOptions& options) {
  constexpr const char* kWhere = "dynamic_conv2d";
  check_rank(x, 4, "x", kWhere);
  check_rank(weight, 5, "weight", kWhere);
  const std::int64_t n = x.dim(0), k = weight.dim(0), co = weight.dim(1);
  check_shape(routing, {n, k}, "routing", kWhere);
  if (bias.defined()) check_shape(bias, {k, co}, "bias", kWhere);
  const Tensor w = aggregate_experts(routing, weight);  // [N, Co, Ci/g, kh, kw]
  const Tensor b = bias.defined() ? aggregate_experts(routing, bias) : Tensor();  // [N, Co]
  if (n == 0) {
    // The output size of an empty batch still follows conv2d's rule (and its checks).
    const Tensor one =
        conv2d(Tensor::zeros({1, x.dim(1), x.dim(2), x.dim(3)}), weight.select0(0), {}, options);
    return Tensor::empty({0, co, one.dim(2), one.dim(3)});
  }
  Tensor y;
  for (std::int64_t i = 0; i < n; ++i) {
    // One image at a time: conv2d spreads each image over all threads.
    const Tensor yi = conv2d(x.slice0(i, i + 1), w.select0(i),
                             b.defined() ? b.select0(i) : Tensor(), options);  // [1, Co, Ho, Wo]
    if (i == 0) y = Tensor::empty({n, co, yi.dim(2), yi.dim(3)});
    y.slice0(i, i + 1).copy_from(yi);
  }
  return y;
}

Tensor dynamic_conv_attention(const Tensor& x, const Tensor& fc1_weight, const Tensor& fc2_weight,
                              const Tensor& fc2_bias, double temperature) {
  constexpr const char* kWhere = "dynamic_conv_attention";
  CVATTN_CHECK(std::isfinite(temperature) && temperature > 0, ValueError, kWhere,
               ": temperature must be positive and finite, got ", temperature);
  check_rank(fc1_weight, 4, "fc1_weight", kWhere);
  check_rank(fc2_weight, 4, "fc2_weight", kWhere);
  const std::int64_t hidden = fc1_weight.dim(0), ci = fc1_weight.dim(1), k = fc2_weight.dim(0);
  check_shape(fc1_weight, {hidden, ci, 1, 1}, "fc1_weight", kWhere);
  check_shape(fc2_weight, {k, hidden, 1, 1}, "fc2_weight", kWhere);
  check_shape(x, {kAny, ci, kAny, kAny}, "x", kWhere);
  const Tensor h = relu(linear(channel_pool(x), fc1_weight.reshape({hidden, ci})));  // [N, hid]
  Tensor logits = linear(h, fc2_weight.reshape({k, hidden}), fc2_bias);              // [N, K]
  const float t = static_cast<float>(temperature);
  for (std::int64_t i = 0; i < logits.numel(); ++i) logits[i] = logits[i] / t;
  return softmax(logits, 1);
}

Tensor cond_conv_routing(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  check_rank(weight, 2, "weight", "cond_conv_routing");
  check_shape(x, {kAny, weight.dim(1), kAny, kAny}, "x", "cond_conv_routing");
  return sigmoid(linear(channel_pool(x), weight, bias));
}

}  // namespace cvattn::functional

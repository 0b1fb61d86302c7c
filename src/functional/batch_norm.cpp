#include "cvattn/functional/batch_norm.hpp"

#include <cmath>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/bn_affine.hpp"
#include "functional/detail/channel_kernels.hpp"

namespace cvattn::functional {
namespace {

// Per-channel scale a and shift b of inference batch norm, in PyTorch's CPU order.
void scale_shift(const Tensor& mean, const Tensor& var, const Tensor& weight, const Tensor& bias,
                 double eps, std::int64_t channels, const char* where, std::vector<float>& a,
                 std::vector<float>& b) {
  check_shape(mean, {channels}, "running_mean", where);
  check_shape(var, {channels}, "running_var", where);
  if (weight.defined()) check_shape(weight, {channels}, "weight", where);
  if (bias.defined()) check_shape(bias, {channels}, "bias", where);
  CVATTN_CHECK(eps >= 0 && std::isfinite(eps), ValueError, where,
               ": eps must be finite and non-negative, got ", eps);
  a.resize(static_cast<std::size_t>(channels));
  b.resize(static_cast<std::size_t>(channels));
  const float e = static_cast<float>(eps);
  for (std::int64_t c = 0; c < channels; ++c) {
    const cvattn::detail::BnAffine f = cvattn::detail::bn_affine(
        weight.defined() ? weight[c] : 1.0f, bias.defined() ? bias[c] : 0.0f, mean[c], var[c], e);
    a[static_cast<std::size_t>(c)] = f.alpha;
    b[static_cast<std::size_t>(c)] = f.beta;
  }
}

}  // namespace

namespace {

// y = x * a + b per channel, plus residual when defined (validated by the caller).
Tensor batch_norm_impl(const Tensor& x, const Tensor& residual, const Tensor& running_mean,
                       const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                       double eps, const char* where) {
  check_defined(x, "input", where);
  CVATTN_CHECK(x.rank() >= 2, ShapeError, where,
               ": tensor 'input' expected [N, C, ...] (rank >= 2), got ", to_string(x.shape()));
  if (residual.defined()) check_shape(residual, x.shape(), "residual", where);
  const std::int64_t channels = x.dim(1);
  std::vector<float> a, b;
  scale_shift(running_mean, running_var, weight, bias, eps, channels, where, a, b);
  Tensor y = Tensor::empty(x.shape());
  if (y.numel() == 0) return y;
  const std::int64_t inner = x.numel() / (x.dim(0) * channels);
  const float* src = x.data();
  const float* res = residual.defined() ? residual.data() : nullptr;
  float* dst = y.data();
  cvattn::detail::parallel_for(x.dim(0) * channels, [&](std::int64_t plane) {
    const auto c = static_cast<std::size_t>(plane % channels);
    cvattn::detail::affine_plane(src + plane * inner, dst + plane * inner, a[c], b[c],
                                 res ? res + plane * inner : nullptr, inner);
  });
  return y;
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, double eps) {
  return batch_norm_impl(x, {}, running_mean, running_var, weight, bias, eps, "batch_norm");
}

Tensor batch_norm_add(const Tensor& x, const Tensor& residual, const Tensor& running_mean,
                      const Tensor& running_var, const Tensor& weight, const Tensor& bias,
                      double eps) {
  check_defined(residual, "residual", "batch_norm_add");
  return batch_norm_impl(x, residual, running_mean, running_var, weight, bias, eps,
                         "batch_norm_add");
}

std::pair<Tensor, Tensor> fold_batch_norm(const Tensor& conv_weight, const Tensor& conv_bias,
                                          const Tensor& running_mean, const Tensor& running_var,
                                          const Tensor& bn_weight, const Tensor& bn_bias,
                                          double eps) {
  constexpr const char* kWhere = "fold_batch_norm";
  check_defined(conv_weight, "conv_weight", kWhere);
  CVATTN_CHECK(conv_weight.rank() >= 1, ShapeError, kWhere,
               ": tensor 'conv_weight' expected [C, ...], got ", to_string(conv_weight.shape()));
  const std::int64_t channels = conv_weight.dim(0);
  if (conv_bias.defined()) check_shape(conv_bias, {channels}, "conv_bias", kWhere);
  std::vector<float> a, b;
  scale_shift(running_mean, running_var, bn_weight, bn_bias, eps, channels, kWhere, a, b);
  Tensor weight = conv_weight.clone();
  Tensor bias = Tensor::empty({channels});
  const std::int64_t per = channels ? conv_weight.numel() / channels : 0;
  for (std::int64_t c = 0; c < channels; ++c) {
    const auto i = static_cast<std::size_t>(c);
    float* w = weight.data() + c * per;
    for (std::int64_t k = 0; k < per; ++k) w[k] *= a[i];
    // (conv_bias - mean) * a + bn_bias = conv_bias * a + b.
    const float cb = conv_bias.defined() ? conv_bias[c] : 0.0f;
    bias[c] = cb * a[i] + b[i];
  }
  return {weight, bias};
}

}  // namespace cvattn::functional

#include "cvattn/functional/normalization.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/channel_kernels.hpp"
#include "functional/detail/grain.hpp"
#include "functional/detail/norm_kernels.hpp"
#include "functional/detail/tasks.hpp"

namespace cvattn::functional {
namespace {

void check_eps(double eps, const char* where) {
  CVATTN_CHECK(std::isfinite(eps) && eps >= 0, ValueError, where,
               ": eps must be finite and non-negative, got ", eps);
}

void check_affine(const Tensor& t, const Shape& shape, const char* name, const char* where) {
  if (!t.defined()) return;
  CVATTN_CHECK(t.shape() == shape, ShapeError, where, ": tensor '", name, "' expected shape ",
               to_string(shape), ", got ", to_string(t.shape()));
}

// Rows per task of layer_norm: enough work per task to amortise the scheduling.
constexpr std::int64_t kRowElements = std::int64_t{1} << 14;

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  constexpr const char* kWhere = "layer_norm";
  check_defined(x, "input", kWhere);
  check_eps(eps, kWhere);
  const auto k = normalized_shape.size();
  CVATTN_CHECK(k >= 1, ValueError, kWhere, ": normalized_shape must name at least one dim");
  const Shape& s = x.shape();
  const bool trailing =
      k <= s.size() && std::equal(normalized_shape.begin(), normalized_shape.end(),
                                  s.end() - static_cast<std::ptrdiff_t>(k));
  CVATTN_CHECK(trailing, ShapeError, kWhere, ": tensor 'input' expected shape [*, ",
               to_string(normalized_shape).substr(1), " (normalized_shape), got ", to_string(s));
  check_affine(weight, normalized_shape, "weight", kWhere);
  check_affine(bias, normalized_shape, "bias", kWhere);
  Tensor y = Tensor::empty(s);
  const std::int64_t d = checked_numel(normalized_shape, "layer_norm normalized_shape");
  if (y.numel() == 0 || d == 0) return y;
  const std::int64_t rows = x.numel() / d;
  const std::int64_t per_task = std::max<std::int64_t>(1, kRowElements / d);
  const float* src = x.data();
  float* dst = y.data();
  const float* w = weight.defined() ? weight.data() : nullptr;
  const float* b = bias.defined() ? bias.data() : nullptr;
  cvattn::detail::parallel_for(detail::ceil_div(rows, per_task), [&](std::int64_t t) {
    const std::int64_t first = t * per_task;
    const std::int64_t end = std::min(rows, first + per_task);
    detail::layer_norm_rows(src + first * d, dst + first * d, end - first, d, w, b, eps);
  });
  return y;
}

Tensor layer_norm2d(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  constexpr const char* kWhere = "layer_norm2d";
  check_defined(x, "input", kWhere);
  check_eps(eps, kWhere);
  // Plain variables, not a structured binding: the lambda below captures them (C++17).
  const Tensor::Nchw dims = x.nchw("input");
  const std::int64_t n = dims.n, c = dims.c, h = dims.h, w = dims.w;
  check_affine(weight, {c}, "weight", kWhere);
  check_affine(bias, {c}, "bias", kWhere);
  Tensor y = Tensor::empty(x.shape());
  if (y.numel() == 0) return y;
  const std::int64_t hw = h * w;
  const std::int64_t tiles = detail::ceil_div(hw, detail::kChannelsFirstTile);
  const float* src = x.data();
  float* dst = y.data();
  const float* wt = weight.defined() ? weight.data() : nullptr;
  const float* bs = bias.defined() ? bias.data() : nullptr;
  const std::int64_t per_task = detail::items_per_task(3 * detail::kChannelsFirstTile * c);
  detail::parallel_ranges(n * tiles, per_task, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t p0 = (t % tiles) * detail::kChannelsFirstTile;
      const std::int64_t offset = (t / tiles) * c * hw + p0;
      detail::layer_norm2d_tile(src + offset, dst + offset, c, hw,
                                std::min(detail::kChannelsFirstTile, hw - p0), wt, bs, eps);
    }
  });
  return y;
}

Tensor group_norm(const Tensor& x, std::int64_t num_groups, const Tensor& weight,
                  const Tensor& bias, double eps) {
  constexpr const char* kWhere = "group_norm";
  check_defined(x, "input", kWhere);
  check_eps(eps, kWhere);
  CVATTN_CHECK(x.rank() >= 2, ShapeError, kWhere,
               ": tensor 'input' expected [N, C, ...] (rank >= 2), got ", to_string(x.shape()));
  const std::int64_t n = x.dim(0), c = x.dim(1);
  CVATTN_CHECK(num_groups > 0 && c % num_groups == 0, ValueError, kWhere, ": num_groups (",
               num_groups, ") must be positive and divide the channels (", c, ") of 'input' ",
               to_string(x.shape()));
  check_affine(weight, {c}, "weight", kWhere);
  check_affine(bias, {c}, "bias", kWhere);
  Tensor y = Tensor::empty(x.shape());
  if (y.numel() == 0) return y;
  const std::int64_t inner = x.numel() / (n * c);
  const std::int64_t per_group = c / num_groups;
  const std::int64_t group_size = per_group * inner;
  const float* src = x.data();
  float* dst = y.data();
  const float* wt = weight.defined() ? weight.data() : nullptr;
  const float* bs = bias.defined() ? bias.data() : nullptr;
  const std::int64_t per_task = detail::items_per_task(3 * group_size);
  detail::parallel_ranges(n * num_groups, per_task, [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const float* in = src + t * group_size;
      const detail::Moments m = detail::moments(in, group_size, eps);
      const std::int64_t c0 = (t % num_groups) * per_group;
      for (std::int64_t k = 0; k < per_group; ++k) {
        // Per channel: y = x * a + b with a = rstd * w, b = bias - mean * a.
        const float a = m.rstd * (wt != nullptr ? wt[c0 + k] : 1.0f);
        const float b = (bs != nullptr ? bs[c0 + k] : 0.0f) - m.mean * a;
        cvattn::detail::affine_plane(in + k * inner, dst + t * group_size + k * inner, a, b,
                                     nullptr, inner);
      }
    }
  });
  return y;
}

}  // namespace cvattn::functional

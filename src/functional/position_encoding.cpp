#include "cvattn/functional/position_encoding.hpp"

#include <cmath>
#include <limits>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"

namespace cvattn::functional {
namespace {

// sin and cos of a float32 argument, evaluated in double and rounded once by the caller.
inline void sincos_of(float a, double& s, double& c) {
  s = std::sin(static_cast<double>(a));
  c = std::cos(static_cast<double>(a));
}

}  // namespace

Tensor position_encoding_sine(const Shape& size, const PositionEncodingOptions& options,
                              const Tensor& mask) {
  const char* where = "position_encoding_sine";
  CVATTN_CHECK(size.size() == 4, ShapeError, where, ": size expected [N, C, H, W], got ",
               to_string(size));
  const std::int64_t N = size[0], C = size[1], H = size[2], W = size[3];
  CVATTN_CHECK(C > 0 && C % 4 == 0, ShapeError, where,
               ": size expected C to be a positive multiple of 4 (num_pos_feats = C/2 must be "
               "even), got ",
               to_string(size));
  const std::int64_t numel = checked_numel(size, where);
  const double temperature = options.temperature();
  CVATTN_CHECK(std::isfinite(temperature) && temperature > 0, ValueError, where,
               ": temperature must be finite and positive, got ", temperature);
  CVATTN_CHECK(!(options.scale() && !options.normalize()), ValueError, where,
               ": normalize should be true if scale is passed (as in DETR)");
  const double scale_d = options.scale() ? *options.scale() : 6.283185307179586;
  CVATTN_CHECK(std::isfinite(scale_d), ValueError, where, ": scale must be finite, got ", scale_d);
  if (mask.defined()) {
    check_shape(mask, {N, H, W}, "mask", where);
    for (std::int64_t i = 0; i < mask.numel(); ++i) {
      CVATTN_CHECK(mask[i] == 0.0f || mask[i] == 1.0f, ValueError, where,
                   ": tensor 'mask' must hold only 0 (valid) and 1 (padded), got ", mask[i],
                   " at flat index ", i);
    }
  }
  // An empty output may still have one huge extent (H = 2^34, W = 0; or C = 2^46, N = 0): return
  // before anything is sized by an extent.
  if (numel == 0) return Tensor::empty(size);
  const std::int64_t F = C / 2;
  // dim_t[t] = T^(2*floor(t/2)/F), the float32 exponent formed as DETR's tensor ops do.
  std::vector<float> dim_t(static_cast<std::size_t>(F));
  for (std::int64_t t = 0; t < F; ++t) {
    const float expo = static_cast<float>(2 * (t / 2)) / static_cast<float>(F);
    dim_t[static_cast<std::size_t>(t)] = static_cast<float>(std::pow(temperature, double(expo)));
  }
  const float scale = static_cast<float>(scale_d);
  const float eps = 1e-6f;
  Tensor out = Tensor::empty(size);
  const std::int64_t HW = H * W;
  float* o = out.data();
  // Running counts of valid pixels down each column (y) and along each row (x); float32 sums
  // of 0/1 are exact.
  std::vector<float> y_embed(static_cast<std::size_t>(N * HW)), x_embed(y_embed.size());
  detail::parallel_for(N, [&](std::int64_t n) {
    float* ye = y_embed.data() + n * HW;
    float* xe = x_embed.data() + n * HW;
    const float* m = mask.defined() ? mask.data() + n * HW : nullptr;
    for (std::int64_t y = 0; y < H; ++y) {
      float run = 0;
      for (std::int64_t x = 0; x < W; ++x) {
        const std::int64_t p = y * W + x;
        const float valid = m ? 1.0f - m[p] : 1.0f;
        run += valid;
        xe[p] = run;
        ye[p] = (y > 0 ? ye[p - W] : 0.0f) + valid;
      }
    }
    if (options.normalize()) {
      for (std::int64_t p = 0; p < HW; ++p) {
        const std::int64_t y = p / W, x = p % W;
        ye[p] = ye[p] / (ye[(H - 1) * W + x] + eps) * scale;
        xe[p] = xe[p] / (xe[y * W + W - 1] + eps) * scale;
      }
    }
    float* on = o + n * C * HW;
    // Channels 2t and 2t+1 share the frequency dim_t[2t]: one sincos serves both.
    for (std::int64_t c = 0; c < F; c += 2) {
      const float d = dim_t[static_cast<std::size_t>(c)];
      float* py = on + c * HW;
      float* px = on + (F + c) * HW;
      for (std::int64_t p = 0; p < HW; ++p) {
        const float ay = ye[p] / d;  // float32 quotient, as DETR
        const float ax = xe[p] / d;
        double sy, cy, sx, cx;
        sincos_of(ay, sy, cy);
        sincos_of(ax, sx, cx);
        py[p] = static_cast<float>(sy);
        py[HW + p] = static_cast<float>(cy);
        px[p] = static_cast<float>(sx);
        px[HW + p] = static_cast<float>(cx);
      }
    }
  });
  return out;
}

Tensor add_position_encoding(const Tensor& x, const Tensor& table) {
  const char* where = "add_position_encoding";
  const auto [n, c, h, w] = x.nchw("x");
  check_defined(table, "table", where);
  if (table.rank() == 3) {
    check_shape(table, {c, h, w}, "table", where);
  } else {
    CVATTN_CHECK(table.rank() == 4, ShapeError, where, ": tensor 'table' expected [1, ", c, ", ", h,
                 ", ", w, "] or [", c, ", ", h, ", ", w, "] (from 'x' ", to_string(x.shape()),
                 "), got ", to_string(table.shape()));
    check_shape(table, {1, c, h, w}, "table", where);
  }
  Tensor out = Tensor::empty(x.shape());
  const std::int64_t chw = c * h * w;
  const float* xd = x.data();
  const float* td = table.data();
  float* o = out.data();
  detail::parallel_for(n, [&](std::int64_t b) {
    for (std::int64_t i = 0; i < chw; ++i) o[b * chw + i] = xd[b * chw + i] + td[i];
  });
  return out;
}

namespace {

void check_window(Pair2 window, const char* where) {
  CVATTN_CHECK(window.h >= 1 && window.w >= 1 && window.h <= 4096 && window.w <= 4096, ValueError,
               where, ": window must be in [1, 4096] per side, got ", window.h, " x ", window.w);
}

}  // namespace

std::vector<std::int64_t> relative_position_index(Pair2 window) {
  const char* where = "relative_position_index";
  check_window(window, where);
  const std::int64_t n = window.h * window.w;
  checked_numel({n, n}, where);
  std::vector<std::int64_t> index(static_cast<std::size_t>(n * n));
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t hi = i / window.w, wi = i % window.w;
    for (std::int64_t j = 0; j < n; ++j) {
      const std::int64_t hj = j / window.w, wj = j % window.w;
      index[static_cast<std::size_t>(i * n + j)] =
          (hi - hj + window.h - 1) * (2 * window.w - 1) + (wi - wj + window.w - 1);
    }
  }
  return index;
}

// The bias of query (hi, wi) to the keys of row hj is the table read backwards from index
// (hi - hj + wh - 1) * (2 ww - 1) + wi + ww - 1 (relative_position_index, wj = 0): with each
// head's column stored reversed, every run of ww outputs is a forward copy, and no index is
// built or divided out per element.
Tensor relative_position_bias(const Tensor& table, Pair2 window) {
  const char* where = "relative_position_bias";
  check_window(window, where);
  const std::int64_t wh = window.h, ww = window.w;
  const std::int64_t entries = (2 * wh - 1) * (2 * ww - 1);
  check_rank(table, 2, "table", where);
  CVATTN_CHECK(table.dim(0) == entries, ShapeError, where, ": tensor 'table' expected [", entries,
               ", heads] ((2*", wh, "-1)*(2*", ww, "-1) rows for a ", wh, "x", ww, " window), got ",
               to_string(table.shape()));
  const std::int64_t heads = table.dim(1), n = wh * ww;
  checked_numel({heads, n, n}, where);
  Tensor out = Tensor::empty({heads, n, n});
  const float* t = table.data();
  float* o = out.data();
  std::vector<float> reversed(static_cast<std::size_t>(entries));
  for (std::int64_t h = 0; h < heads; ++h) {
    for (std::int64_t e = 0; e < entries; ++e) {
      reversed[static_cast<std::size_t>(entries - 1 - e)] = t[e * heads + h];
    }
    float* oh = o + h * n * n;
    for (std::int64_t hi = 0; hi < wh; ++hi) {
      for (std::int64_t wi = 0; wi < ww; ++wi) {
        float* row = oh + (hi * ww + wi) * n;
        for (std::int64_t hj = 0; hj < wh; ++hj) {
          const std::int64_t first = (hi - hj + wh - 1) * (2 * ww - 1) + wi + ww - 1;
          const float* src = reversed.data() + (entries - 1 - first);
          float* dst = row + hj * ww;
          for (std::int64_t wj = 0; wj < ww; ++wj) dst[wj] = src[wj];
        }
      }
    }
  }
  return out;
}

}  // namespace cvattn::functional

#include "cvattn/functional/window_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/sdpa_kernel.hpp"
#include "functional/detail/window.hpp"

namespace cvattn::functional {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

void check_window(Pair2 window, Pair2 shift, const char* where) {
  detail::check_pair(window, 1, "window", where);
  detail::check_pair(shift, 0, "shift", where);
  CVATTN_CHECK(shift.h < window.h && shift.w < window.w, ValueError, where, ": shift (", shift.h,
               ", ", shift.w, ") must be smaller than the window (", window.h, ", ", window.w, ")");
}

// Copies `count` floats, or zeros them when src is null (the padding).
inline void copy_or_zero(const float* src, float* dst, std::int64_t count) {
  if (src != nullptr) {
    std::memcpy(dst, src, static_cast<std::size_t>(count) * sizeof(float));
  } else {
    std::memset(dst, 0, static_cast<std::size_t>(count) * sizeof(float));
  }
}

// Python's a[start:stop] bounds on a sequence of length n (negative from the end, clamped).
std::int64_t py_index(std::int64_t i, std::int64_t n) {
  const std::int64_t v = i < 0 ? i + n : i;
  return std::clamp<std::int64_t>(v, 0, n);
}

// Region label (0, 1 or 2) of each position of a padded axis of length n: the last of timm's
// slices [0:-window], [-window:-shift], [-shift:] holding it (later slices overwrite earlier
// ones in get_attn_mask; -0 is 0 in Python, so a zero shift makes the last slice the whole axis).
std::vector<int> region_labels(std::int64_t n, std::int64_t window, std::int64_t shift) {
  std::vector<int> label(static_cast<std::size_t>(n), 0);
  const std::int64_t bounds[3][2] = {{py_index(0, n), py_index(-window, n)},
                                     {py_index(-window, n), py_index(-shift, n)},
                                     {py_index(-shift, n), n}};
  for (int r = 0; r < 3; ++r) {
    for (std::int64_t p = bounds[r][0]; p < bounds[r][1]; ++p) {
      label[static_cast<std::size_t>(p)] = r;
    }
  }
  return label;
}

}  // namespace

std::int64_t window_count(Pair2 size, Pair2 window) {
  detail::check_pair(window, 1, "window", "window_count");
  detail::check_pair(size, 0, "size", "window_count");
  return ceil_div(size.h, window.h) * ceil_div(size.w, window.w);
}

Tensor window_partition(const Tensor& x, Pair2 window, Pair2 shift) {
  const char* where = "window_partition";
  check_defined(x, "x", where);
  check_rank(x, 4, "x", where);
  check_window(window, shift, where);
  const std::int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const std::int64_t gh = ceil_div(h, window.h), gw = ceil_div(w, window.w);
  const std::int64_t area = window.h * window.w;
  Tensor out = Tensor::empty({checked_numel({n, gh, gw}, where), area, c});
  if (out.numel() == 0) return out;
  const float* src = x.data();
  float* dst = out.data();
  // One task per (sample, window row): wh rows of whole windows.
  cvattn::detail::parallel_for(n * gh, [&](std::int64_t task) {
    const std::int64_t b = task / gh, wi = task % gh;
    for (std::int64_t i = 0; i < window.h; ++i) {
      const std::int64_t p = wi * window.h + i;
      const float* row = p < h ? src + (b * h + (p + shift.h) % h) * w * c : nullptr;
      for (std::int64_t wj = 0; wj < gw; ++wj) {
        float* win = dst + ((task * gw + wj) * area + i * window.w) * c;
        for (std::int64_t j = 0; j < window.w; ++j) {
          const std::int64_t q = wj * window.w + j;
          copy_or_zero(row != nullptr && q < w ? row + ((q + shift.w) % w) * c : nullptr,
                       win + j * c, c);
        }
      }
    }
  });
  return out;
}

Tensor window_reverse(const Tensor& windows, Pair2 size, Pair2 window, Pair2 shift) {
  const char* where = "window_reverse";
  check_defined(windows, "windows", where);
  check_rank(windows, 3, "windows", where);
  check_window(window, shift, where);
  detail::check_pair(size, 1, "size", where);
  const std::int64_t gh = ceil_div(size.h, window.h), gw = ceil_div(size.w, window.w);
  const std::int64_t area = window.h * window.w, per_sample = gh * gw;
  CVATTN_CHECK(windows.dim(1) == area && windows.dim(0) % per_sample == 0, ShapeError, where,
               ": tensor 'windows' expected [N * ", per_sample, ", ", area, ", C] (", gh, "x", gw,
               " windows of ", window.h, "x", window.w, " per ", size.h, "x", size.w, " map), got ",
               to_string(windows.shape()));
  const std::int64_t n = windows.dim(0) / per_sample, c = windows.dim(2);
  const std::int64_t h = size.h, w = size.w;
  Tensor out = Tensor::empty({n, h, w, c});
  if (out.numel() == 0) return out;
  const float* src = windows.data();
  float* dst = out.data();
  cvattn::detail::parallel_for(n * h, [&](std::int64_t task) {
    const std::int64_t b = task / h, r = task % h;
    const std::int64_t p = (r - shift.h + h) % h;  // roll back: out[r] = shifted[r - shift]
    const std::int64_t wi = p / window.h, i = p % window.h;
    for (std::int64_t col = 0; col < w; ++col) {
      const std::int64_t q = (col - shift.w + w) % w;
      const std::int64_t wj = q / window.w, j = q % window.w;
      std::memcpy(dst + (task * w + col) * c,
                  src + (((b * gh + wi) * gw + wj) * area + i * window.w + j) * c,
                  static_cast<std::size_t>(c) * sizeof(float));
    }
  });
  return out;
}

Tensor shifted_window_mask(Pair2 size, Pair2 window, Pair2 shift) {
  const char* where = "shifted_window_mask";
  check_window(window, shift, where);
  detail::check_pair(size, 1, "size", where);
  const std::int64_t gh = ceil_div(size.h, window.h), gw = ceil_div(size.w, window.w);
  const std::int64_t area = window.h * window.w;
  const std::vector<int> rows = region_labels(gh * window.h, window.h, shift.h);
  const std::vector<int> cols = region_labels(gw * window.w, window.w, shift.w);
  (void)checked_numel({gh, gw, area, area}, where);
  Tensor out = Tensor::empty({gh * gw, area, area});
  std::vector<int> label(static_cast<std::size_t>(area));
  float* dst = out.data();
  for (std::int64_t wi = 0; wi < gh; ++wi) {
    for (std::int64_t wj = 0; wj < gw; ++wj) {
      for (std::int64_t t = 0; t < area; ++t) {
        const auto p = static_cast<std::size_t>(wi * window.h + t / window.w);
        const auto q = static_cast<std::size_t>(wj * window.w + t % window.w);
        label[static_cast<std::size_t>(t)] = 3 * rows[p] + cols[q];
      }
      for (std::int64_t a = 0; a < area; ++a) {
        for (std::int64_t b = 0; b < area; ++b) {
          *dst++ = label[static_cast<std::size_t>(a)] == label[static_cast<std::size_t>(b)]
                       ? 0.0f
                       : kShiftedWindowMaskValue;
        }
      }
    }
  }
  return out;
}

AttentionResult window_attention(const Tensor& qkv, std::int64_t num_heads, const Tensor& bias,
                                 const WindowAttentionOptions& options) {
  const char* where = "window_attention";
  check_defined(qkv, "qkv", where);
  check_rank(qkv, 3, "qkv", where);
  CVATTN_CHECK(num_heads >= 1, ValueError, where, ": num_heads must be >= 1, got ", num_heads);
  const std::int64_t B = qkv.dim(0), A = qkv.dim(1), C3 = qkv.dim(2);
  CVATTN_CHECK(C3 % (3 * num_heads) == 0 && C3 > 0, ShapeError, where,
               ": tensor 'qkv' expected [B, A, 3 * num_heads * E] with num_heads = ", num_heads,
               ", got ", to_string(qkv.shape()));
  const std::int64_t C = C3 / 3, E = C / num_heads;
  std::int64_t windows = 1;
  if (bias.defined()) {
    if (bias.rank() == 3) {
      check_shape(bias, {num_heads, A, A}, "bias", where);
    } else {
      check_rank(bias, 4, "bias", where);
      check_shape(bias, {kAny, num_heads, A, A}, "bias", where);
      windows = bias.dim(0);
      CVATTN_CHECK(windows >= 1 && B % windows == 0, ShapeError, where, ": tensor 'bias' has ",
                   windows, " windows, which must divide the ", B, " windows of 'qkv'");
    }
  }
  float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(E)));
  if (options.scale()) {
    CVATTN_CHECK(std::isfinite(*options.scale()), ValueError, where, ": scale must be finite, got ",
                 *options.scale());
    scale = static_cast<float>(*options.scale());
  }

  AttentionResult result;
  result.output = Tensor::empty({B, A, C});
  if (options.need_weights()) {
    (void)checked_numel({B, num_heads, A, A}, where);
    result.attn_weights = Tensor::empty({B, num_heads, A, A});
  }
  cvattn::detail::SdpaPlan p;
  p.heads = checked_numel({B, num_heads}, where);
  p.L = A, p.S = A, p.E = E, p.Ev = E;
  p.scale = scale;
  p.q = qkv.data(), p.k = qkv.data() + C, p.v = qkv.data() + 2 * C;
  p.q_rs = p.k_rs = p.v_rs = C3;
  p.out = result.output.data();
  p.out_rs = C;
  if (options.need_weights()) p.weights = result.attn_weights.data();
  const auto heads = static_cast<std::size_t>(p.heads);
  p.q_off.resize(heads), p.k_off.resize(heads), p.v_off.resize(heads), p.out_off.resize(heads);
  if (bias.defined()) {
    p.mask = bias.data();
    p.mask_rs = A, p.mask_cs = 1;
    p.mask_off.resize(heads);
  }
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < num_heads; ++h) {
      const auto i = static_cast<std::size_t>(b * num_heads + h);
      p.q_off[i] = p.k_off[i] = p.v_off[i] = b * A * C3 + h * E;
      p.out_off[i] = b * A * C + h * E;
      if (bias.defined()) p.mask_off[i] = ((b % windows) * num_heads + h) * A * A;
    }
  }
  cvattn::detail::run_sdpa(p);
  return result;
}

Tensor merge_patches(const Tensor& x) {
  const char* where = "merge_patches";
  check_defined(x, "x", where);
  check_rank(x, 4, "x", where);
  const std::int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const std::int64_t ho = ceil_div(h, 2), wo = ceil_div(w, 2);
  Tensor out = Tensor::empty({n, ho, wo, checked_numel({4, c}, where)});
  if (out.numel() == 0) return out;
  const float* src = x.data();
  float* dst = out.data();
  cvattn::detail::parallel_for(n * ho, [&](std::int64_t task) {
    const std::int64_t b = task / ho, i = task % ho;
    for (std::int64_t j = 0; j < wo; ++j) {
      float* o = dst + (task * wo + j) * 4 * c;
      for (std::int64_t k = 0; k < 4; ++k) {
        const std::int64_t r = 2 * i + k % 2, col = 2 * j + k / 2;
        copy_or_zero(r < h && col < w ? src + ((b * h + r) * w + col) * c : nullptr, o + k * c, c);
      }
    }
  });
  return out;
}

}  // namespace cvattn::functional

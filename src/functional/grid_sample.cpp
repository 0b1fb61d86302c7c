// grid_sample and grid_sample_backward (docs/modules.md §8), reproducing PyTorch's x86-64 CPU kernel
// (aten/src/ATen/native/cpu/GridSamplerKernel.cpp) including its float32 coordinate arithmetic
// and its treatment of NaN, +-inf and huge grid values.
//
// Layout of the work: the output pixels of one image are processed in blocks. For a block the taps
// (offsets, weights, in-bounds bits) are computed once per pixel, then reused for every channel.
// Blocks of all images are spread over the threads; scratch lives on the stack, nothing is
// allocated inside the parallel region.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/functional/sampling3d.hpp"
#include "functional/detail/bilinear_taps.hpp"

// The interior bilinear loop has an SSE version (x86-64 always has SSE2); defining
// CVATTN_SAMPLING_SSE=0 forces the portable loop, which the tests also cover.
#ifndef CVATTN_SAMPLING_SSE
#if defined(__SSE2__) || defined(_M_X64)
#define CVATTN_SAMPLING_SSE 1
#else
#define CVATTN_SAMPLING_SSE 0
#endif
#endif
#if CVATTN_SAMPLING_SSE
#include <immintrin.h>
#endif

namespace cvattn::functional {
namespace {

using detail::BilinearTaps;
using detail::kAllInside;

// Output pixels whose taps are computed together: bilinear/nearest forward, and the kernels
// that keep more per pixel (bicubic, backward).
constexpr std::int64_t kBlock = 1024;
constexpr std::int64_t kCubicBlock = 256;
constexpr std::int64_t kGroup = 4;  // channels per pass of the bilinear/nearest forward loops
constexpr std::int64_t kLookahead = 64;  // prefetch distance in pixels within a plane

struct Geometry {
  std::int64_t n, c, h, w, ho, wo;
  [[nodiscard]] std::int64_t in_plane() const { return h * w; }
  [[nodiscard]] std::int64_t out_plane() const { return ho * wo; }
  [[nodiscard]] std::int64_t blocks(std::int64_t size) const {
    return (out_plane() + size - 1) / size;
  }
};

// One axis of the grid: normalised coordinate -> pixel coordinate (§8.1) and padding (§8.2), in
// the float32 operation order of PyTorch's vectorised kernel (whose build contracts
// `(g + 1) * scale - 0.5` and `a - flips * span` into FMAs, hence the std::fma calls).
template <PaddingMode P, bool AC>
class Axis {
 public:
  explicit Axis(std::int64_t size)
      : size_(static_cast<std::int32_t>(size)),
        max_val_(static_cast<float>(size - 1)),
        scale_(AC ? static_cast<float>(size - 1) / 2 : static_cast<float>(size) / 2),
        low_(AC ? 0.0f : -0.5f),
        twice_span_(AC ? static_cast<float>(size - 1) * 2 : static_cast<float>(size) * 2),
        empty_(AC && size <= 1) {}

  [[nodiscard]] std::int32_t size() const { return size_; }
  [[nodiscard]] float scale() const { return scale_; }

  [[nodiscard]] float unnormalize(float g) const {
    if constexpr (AC) {
      return (g + 1.0f) * scale_;
    } else {
      return std::fma(g + 1.0f, scale_, -0.5f);
    }
  }

  // The padding transform of a pixel coordinate (bilinear/nearest: of the sample position;
  // bicubic: of each integer tap).
  [[nodiscard]] float pad(float c) const {
    if constexpr (P == PaddingMode::zeros) {
      return c;
    } else if constexpr (P == PaddingMode::border) {
      return clip(c);
    } else {
      return clip(reflect(c));
    }
  }

  [[nodiscard]] float apply(float g) const { return pad(unnormalize(g)); }

  // apply() plus d(result)/d(g) as PyTorch's backward computes it: the clip has derivative 0 at
  // and beyond its limits; reflection flips the sign on odd reflections. NaN stays NaN here
  // (PyTorch's backward keeps it too), the tap routine then treats it as outside.
  [[nodiscard]] float apply_with_grad(float g, float* grad) const {
    const float c = unnormalize(g);
    if constexpr (P == PaddingMode::zeros) {
      *grad = scale_;
      return c;
    } else if constexpr (P == PaddingMode::border) {
      bool inside;
      const float r = clip_with_grad(c, &inside);
      *grad = inside ? scale_ : 0.0f;
      return r;
    } else {
      if (empty_) {
        *grad = 0.0f;
        return 0.0f;  // PyTorch returns (0, 0) before clipping
      }
      const float shifted = c - low_;
      const bool negative = shifted < 0.0f;
      const float a = std::fabs(shifted);
      const float flips = std::trunc(a / twice_span_);
      const float extra = std::fma(-flips, twice_span_, a);
      const float mirrored = twice_span_ - extra;
      const bool one_more = extra > mirrored;
      const float sign = (one_more != negative) ? -1.0f : 1.0f;
      bool inside;
      const float r = clip_with_grad((one_more ? mirrored : extra) + low_, &inside);
      *grad = inside ? sign * scale_ : 0.0f;
      return r;
    }
  }

 private:
  // clamp to [0, size-1]; NaN -> 0 (maxps(c, 0) returns its second operand for NaN).
  [[nodiscard]] float clip(float c) const {
    const float lo = c > 0.0f ? c : 0.0f;
    return lo < max_val_ ? lo : max_val_;
  }

  // PyTorch's clip_coordinates_get_grad: NaN propagates; the limits themselves (and -0) count as
  // outside for the gradient.
  [[nodiscard]] float clip_with_grad(float c, bool* inside) const {
    if (std::isnan(c)) {
      *inside = true;
      return c;
    }
    *inside = c > 0.0f && c < max_val_;
    const float lo = c > 0.0f ? c : 0.0f;
    return lo < max_val_ ? lo : max_val_;
  }

  // Reflection into [low, low + span]. The vectorised kernel's formula: fold |c - low| by the
  // double span, then mirror the upper half. NaN and +-inf give NaN (clip then makes it 0).
  [[nodiscard]] float reflect(float c) const {
    if (empty_) return 0.0f;
    const float a = std::fabs(c - low_);
    const float flips = std::trunc(a / twice_span_);
    const float extra = std::fma(-flips, twice_span_, a);
    const float mirrored = twice_span_ - extra;
    // min(extra, mirrored) that keeps NaN, in one comparison so the loop still vectorises.
    return (!(extra >= mirrored) ? extra : mirrored) + low_;
  }

  std::int32_t size_;
  float max_val_;
  float scale_;
  float low_;
  float twice_span_;
  bool empty_;
};

// An integral float (or NaN/inf) as an index in [-2, 2^30]; see detail::clamp_floor_index.
inline std::int32_t to_index(float v) { return detail::clamp_floor_index(v); }

// Software prefetch (a hint; compiled out where the compiler has no builtin). The kernels
// prefetch the planes the next channel (group) will read at the offsets of the current one: the
// hardware prefetcher cannot follow that many short strided streams.
inline void prefetch_read(const float* p) {
#if defined(__GNUC__)
  __builtin_prefetch(p, 0, 3);
#else
  (void)p;
#endif
}
inline void prefetch_write(float* p) {
#if defined(__GNUC__)
  __builtin_prefetch(p, 1, 3);
#else
  (void)p;
#endif
}

// Keys cubic convolution weights (A = -0.75) for taps at -1, 0, +1, +2 from a fraction t.
inline void cubic_weights(float t, float w[4]) {
  constexpr float A = -0.75f;
  float x = t + 1.0f;
  w[0] = ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A;
  x = t;
  w[1] = ((A + 2.0f) * x - (A + 3.0f)) * x * x + 1.0f;
  x = 1.0f - t;
  w[2] = ((A + 2.0f) * x - (A + 3.0f)) * x * x + 1.0f;
  x = 2.0f - t;
  w[3] = ((A * x - 5.0f * A) * x + 8.0f * A) * x - 4.0f * A;
}

// PyTorch's get_cubic_coefficients_grad (it subtracts these, hence the sign convention).
inline void cubic_weight_grads(float t, float w[4]) {
  constexpr float A = -0.75f;
  float x = -1.0f - t;
  w[0] = (-3.0f * A * x - 10.0f * A) * x - 8.0f * A;
  x = -t;
  w[1] = (-3.0f * (A + 2.0f) * x - 2.0f * (A + 3.0f)) * x;
  x = 1.0f - t;
  w[2] = (3.0f * (A + 2.0f) * x - 2.0f * (A + 3.0f)) * x;
  x = 2.0f - t;
  w[3] = (3.0f * A * x - 10.0f * A) * x + 8.0f * A;
}

// The 4x4 taps of a bicubic sample: each integer tap goes through the padding transform and is
// read only when inside (zeros padding), like PyTorch's get_value_bounded.
struct CubicTaps {
  std::int32_t col[4];   // x index of tap i (0 when outside)
  std::int32_t row[4];   // y index * w of tap j (0 when outside)
  std::uint32_t col_in;  // bit i: column i inside
  std::uint32_t row_in;  // bit j: row j inside
  float wx[4], wy[4];
  float tx, ty;
  bool dense;  // all 16 taps inside and the columns consecutive: rows are 4 contiguous floats
};

template <PaddingMode P, bool AC>
inline void cubic_taps(const Axis<P, AC>& ax, const Axis<P, AC>& ay, float gx, float gy,
                       CubicTaps& t) {
  const float x = ax.unnormalize(gx);
  const float y = ay.unnormalize(gy);
  const float x0 = std::floor(x);
  const float y0 = std::floor(y);
  t.tx = x - x0;
  t.ty = y - y0;
  cubic_weights(t.tx, t.wx);
  cubic_weights(t.ty, t.wy);
  t.col_in = 0;
  t.row_in = 0;
  for (int i = 0; i < 4; ++i) {
    const float offset = static_cast<float>(i - 1);
    const std::int32_t xi = to_index(std::trunc(ax.pad(x0 + offset)));
    const std::int32_t yi = to_index(std::trunc(ay.pad(y0 + offset)));
    const bool xok = xi >= 0 && xi < ax.size();
    const bool yok = yi >= 0 && yi < ay.size();
    t.col[i] = xok ? xi : 0;
    t.row[i] = yok ? yi * ax.size() : 0;
    t.col_in |= static_cast<std::uint32_t>(xok) << i;
    t.row_in |= static_cast<std::uint32_t>(yok) << i;
  }
  t.dense = t.col_in == 15u && t.row_in == 15u && t.col[1] == t.col[0] + 1 &&
            t.col[2] == t.col[0] + 2 && t.col[3] == t.col[0] + 3;
}

// One bicubic sample of one plane: rows of four taps weighted by wx, then the rows by wy, in
// PyTorch's order. Outside taps (zeros padding) read 0 via the masks.
inline float bicubic_read(const float* src, const CubicTaps& t) {
  float v[4][4];
  if (t.col_in == 15u && t.row_in == 15u) {
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 4; ++i) v[j][i] = src[t.row[j] + t.col[i]];
    }
  } else {
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 4; ++i) {
        const float x = src[t.row[j] + t.col[i]];  // offsets of outside taps are 0: valid
        v[j][i] = (((t.row_in >> j) & (t.col_in >> i)) & 1u) ? x : 0.0f;
      }
    }
  }
  float rows[4];
  for (int j = 0; j < 4; ++j) {
    rows[j] = std::fma(t.wx[3], v[j][3],
                       std::fma(t.wx[2], v[j][2], std::fma(t.wx[1], v[j][1], t.wx[0] * v[j][0])));
  }
  return std::fma(t.wy[3], rows[3],
                  std::fma(t.wy[2], rows[2], std::fma(t.wy[1], rows[1], t.wy[0] * rows[0])));
}

// ---------------------------------------------------------------------------------------------
// Forward kernels. `in` is image n's [C, H, W], `grid` points at the block's first (x, y) pair,
// `out` at the block's first pixel of channel 0 of image n. Every kernel first computes the
// taps of its block (a vectorised loop), then runs channel by channel over the block, so each
// inner loop touches one input plane and one output row segment (channel-innermost loops thrash
// the cache when planes are a multiple of 4 KiB apart).

// Interior samples (all four corners inside) of a bilinear block, SoA for the vectorised loops.
struct alignas(64) BilinearBlock {
  std::int32_t nw[kBlock];  // offset of the nw corner for interior samples, 0 otherwise
  float w[4][kBlock];
};

// The other samples of a block, handled one by one with the masked rule.
struct EdgeSamples {
  std::int32_t pixel[kBlock];
  BilinearTaps taps[kBlock];
  std::int64_t count = 0;
};

#if CVATTN_SAMPLING_SSE
inline __m128 fmadd4(__m128 a, __m128 b, __m128 c) {
#if defined(__FMA__)
  return _mm_fmadd_ps(a, b, c);
#else
  return _mm_add_ps(_mm_mul_ps(a, b), c);
#endif
}

// [s[o], s[o+1], s[o+w], s[o+w+1]]: the four corners of an interior sample in two 8-byte loads.
inline __m128 load_corners(const float* s, std::int32_t o, std::int64_t w) {
  double top, bottom;  // memcpy: the pairs are only 4-byte aligned (compiles to movsd/movhpd)
  std::memcpy(&top, s + o, sizeof top);
  std::memcpy(&bottom, s + o + w, sizeof bottom);
  return _mm_castpd_ps(_mm_set_pd(bottom, top));
}

// Four interior samples of one plane, summed nw, ne, sw, se like PyTorch.
inline __m128 bilinear4(const float* s, const std::int32_t* o, std::int64_t w, const __m128* wt) {
  __m128 a0 = load_corners(s, o[0], w);
  __m128 a1 = load_corners(s, o[1], w);
  __m128 a2 = load_corners(s, o[2], w);
  __m128 a3 = load_corners(s, o[3], w);
  _MM_TRANSPOSE4_PS(a0, a1, a2, a3);  // a0: the 4 nw values, a1: ne, a2: sw, a3: se
  return fmadd4(a3, wt[3], fmadd4(a2, wt[2], fmadd4(a1, wt[1], _mm_mul_ps(a0, wt[0]))));
}
#endif

inline float bilinear1(const float* s, std::int32_t o, std::int64_t w, float w0, float w1,
                       float w2, float w3) {
  return std::fma(s[o + w + 1], w3, std::fma(s[o + w], w2, std::fma(s[o + 1], w1, s[o] * w0)));
}

// Weights and nw offset of every sample of a block (bit-identical to detail::bilinear_taps);
// samples with a corner outside the plane get offset 0 and are listed in `edges` for the masked
// rule. Returns how many were listed.
inline std::int64_t interior_taps(const float* xs, const float* ys, std::int64_t count,
                                  std::int32_t h, std::int32_t w, BilinearBlock& b,
                                  std::int32_t* edges) {
  std::int64_t n = 0;
  std::int64_t p = 0;
#if CVATTN_SAMPLING_SSE && defined(__AVX2__)
  // Eight samples per step with an integer bounds test; the edge list comes from the lane mask,
  // so the common all-interior step has no per-sample branch.
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256i vw = _mm256_set1_epi32(w), minus1 = _mm256_set1_epi32(-1);
  const __m256i last_x = _mm256_set1_epi32(w - 1), last_y = _mm256_set1_epi32(h - 1);
  for (; p + 8 <= count; p += 8) {
    const __m256 x = _mm256_load_ps(xs + p), y = _mm256_load_ps(ys + p);
    const __m256 x0 = _mm256_floor_ps(x), y0 = _mm256_floor_ps(y);
    const __m256 lx = _mm256_sub_ps(x, x0), ly = _mm256_sub_ps(y, y0);
    const __m256 hx = _mm256_sub_ps(one, lx), hy = _mm256_sub_ps(one, ly);
    _mm256_store_ps(b.w[0] + p, _mm256_mul_ps(hy, hx));
    _mm256_store_ps(b.w[1] + p, _mm256_mul_ps(hy, lx));
    _mm256_store_ps(b.w[2] + p, _mm256_mul_ps(ly, hx));
    _mm256_store_ps(b.w[3] + p, _mm256_mul_ps(ly, lx));
    // NaN, +-inf and values past the int32 range convert to INT_MIN, which fails xi > -1.
    const __m256i xi = _mm256_cvttps_epi32(x0), yi = _mm256_cvttps_epi32(y0);
    const __m256i in = _mm256_and_si256(
        _mm256_and_si256(_mm256_cmpgt_epi32(xi, minus1), _mm256_cmpgt_epi32(last_x, xi)),
        _mm256_and_si256(_mm256_cmpgt_epi32(yi, minus1), _mm256_cmpgt_epi32(last_y, yi)));
    const __m256i nw = _mm256_add_epi32(_mm256_mullo_epi32(yi, vw), xi);
    _mm256_store_si256(reinterpret_cast<__m256i*>(b.nw + p), _mm256_and_si256(nw, in));
    auto outside = static_cast<unsigned>(~_mm256_movemask_ps(_mm256_castsi256_ps(in))) & 0xffu;
    while (outside != 0u) {
      edges[n++] = static_cast<std::int32_t>(p + __builtin_ctz(outside));
      outside &= outside - 1u;
    }
  }
#endif
  for (; p < count; ++p) {
    const BilinearTaps t = detail::bilinear_taps(xs[p], ys[p], h, w);
    b.nw[p] = t.inside == kAllInside ? t.offset[0] : 0;
    for (int k = 0; k < 4; ++k) b.w[k][p] = t.weight[k];
    if (t.inside != kAllInside) edges[n++] = static_cast<std::int32_t>(p);
  }
  return n;
}

template <PaddingMode P, bool AC>
void bilinear_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                    const float* in, const float* grid, float* out, std::int64_t count) {
  BilinearBlock b;
  EdgeSamples edges;
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  // Sample positions first: the padding transform alone vectorises as plain float code.
  alignas(32) float xs[kBlock];
  alignas(32) float ys[kBlock];
  for (std::int64_t p = 0; p < count; ++p) {
    xs[p] = ax.apply(grid[2 * p]);
    ys[p] = ay.apply(grid[2 * p + 1]);
  }
  const std::int64_t n_edges = interior_taps(xs, ys, count, h, w, b, edges.pixel);
  for (std::int64_t e = 0; e < n_edges; ++e) {
    const std::int32_t p = edges.pixel[e];
    edges.taps[e] = detail::bilinear_taps(xs[p], ys[p], h, w);
  }
  edges.count = n_edges;
  const std::int64_t interior = count - n_edges;
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  // Pass 1: every pixel with the unmasked interior formula (edge pixels read the valid dummy
  // offset 0 and are overwritten in pass 2). An interior sample implies h, w >= 2, so the
  // dummy's four reads are in bounds.
  if (interior > 0) {
    for (std::int64_t c0 = 0; c0 < g.c; c0 += kGroup) {
      const std::int64_t group = std::min(kGroup, g.c - c0);
      [[maybe_unused]] const std::int64_t ahead = std::min(kGroup, g.c - c0 - group);
      const float* s = in + c0 * in_plane;
      float* d = out + c0 * out_plane;
      std::int64_t p = 0;
#if CVATTN_SAMPLING_SSE
      for (; p + 4 <= count; p += 4) {
        const std::int32_t* o = b.nw + p;
        const __m128 wt[4] = {_mm_load_ps(b.w[0] + p), _mm_load_ps(b.w[1] + p),
                              _mm_load_ps(b.w[2] + p), _mm_load_ps(b.w[3] + p)};
        for (std::int64_t k = 0; k < ahead; ++k) {
          const float* next = s + (group + k) * in_plane + o[0];
          prefetch_read(next);
          prefetch_read(next + w);
        }
        // The last group has nothing after it: fetch this group's planes a little ahead.
        if (ahead == 0 && p + kLookahead < count) {
          for (std::int64_t k = 0; k < group; ++k) {
            const float* next = s + k * in_plane + b.nw[p + kLookahead];
            prefetch_read(next);
            prefetch_read(next + w);
          }
        }
        for (std::int64_t k = 0; k < group; ++k) {
          _mm_storeu_ps(d + k * out_plane + p, bilinear4(s + k * in_plane, o, w, wt));
        }
      }
#endif
      for (; p < count; ++p) {
        for (std::int64_t k = 0; k < group; ++k) {
          d[k * out_plane + p] = bilinear1(s + k * in_plane, b.nw[p], w, b.w[0][p], b.w[1][p],
                                           b.w[2][p], b.w[3][p]);
        }
      }
    }
  }
  // Pass 2: samples with a corner outside, with the masked rule.
  for (std::int64_t c = 0; c < g.c; ++c) {
    const float* s = in + c * in_plane;
    float* d = out + c * out_plane;
    for (std::int64_t e = 0; e < edges.count; ++e) {
      d[edges.pixel[e]] = detail::bilinear_read(s, edges.taps[e]);
    }
  }
}

template <PaddingMode P, bool AC>
void nearest_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                   const float* in, const float* grid, float* out, std::int64_t count) {
  alignas(64) std::int32_t off[kBlock];
  alignas(64) std::int32_t ok[kBlock];
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  for (std::int64_t p = 0; p < count; ++p) {
    // nearbyint: round half to even, as _mm256_round_ps does (std::round would not).
    const std::int32_t xi = to_index(std::nearbyint(ax.apply(grid[2 * p])));
    const std::int32_t yi = to_index(std::nearbyint(ay.apply(grid[2 * p + 1])));
    // Unsigned range tests, no bool values: the loop vectorises.
    const std::int32_t inside = static_cast<std::uint32_t>(xi) < static_cast<std::uint32_t>(w)
                                    ? (static_cast<std::uint32_t>(yi) < static_cast<std::uint32_t>(h)
                                           ? 1 : 0)
                                    : 0;
    ok[p] = inside;
    off[p] = inside ? yi * w + xi : 0;
  }
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t c0 = 0; c0 < g.c; c0 += kGroup) {
    const std::int64_t group = std::min(kGroup, g.c - c0);
    const std::int64_t ahead = std::min(kGroup, g.c - c0 - group);  // planes to prefetch
    const float* s = in + c0 * in_plane;
    float* d = out + c0 * out_plane;
    for (std::int64_t p = 0; p < count; ++p) {
      const std::int32_t o = off[p];
      const bool inside = ok[p] != 0;
      if ((p & 3) == 0) {
        for (std::int64_t k = 0; k < ahead; ++k) prefetch_read(s + (group + k) * in_plane + o);
        // The last group has nothing after it: fetch this group's planes a little ahead.
        if (ahead == 0 && p + kLookahead < count) {
          for (std::int64_t k = 0; k < group; ++k) {
            prefetch_read(s + k * in_plane + off[p + kLookahead]);
          }
        }
      }
      for (std::int64_t k = 0; k < group; ++k) {
        const float v = s[k * in_plane + o];  // offset 0 when outside: always a valid read
        d[k * out_plane + p] = inside ? v : 0.0f;
      }
    }
  }
}

template <PaddingMode P, bool AC>
void bicubic_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                   const float* in, const float* grid, float* out, std::int64_t count) {
  CubicTaps taps[kCubicBlock];
  for (std::int64_t p = 0; p < count; ++p) cubic_taps(ax, ay, grid[2 * p], grid[2 * p + 1], taps[p]);
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t c = 0; c < g.c; ++c) {
    const float* src = in + c * in_plane;
    float* dst = out + c * out_plane;
    for (std::int64_t p = 0; p < count; ++p) {
      const CubicTaps& t = taps[p];
#if CVATTN_SAMPLING_SSE
      if (t.dense) {
        // Four 16-byte row loads instead of 16 scalar ones; rows are combined with wy first,
        // then with wx (a different summation order than PyTorch's, within rounding).
        __m128 acc = _mm_mul_ps(_mm_set1_ps(t.wy[0]), _mm_loadu_ps(src + t.row[0] + t.col[0]));
        for (int j = 1; j < 4; ++j) {
          acc = fmadd4(_mm_set1_ps(t.wy[j]), _mm_loadu_ps(src + t.row[j] + t.col[0]), acc);
        }
        __m128 v = _mm_mul_ps(acc, _mm_loadu_ps(t.wx));
        v = _mm_add_ps(v, _mm_movehl_ps(v, v));
        v = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1));
        dst[p] = _mm_cvtss_f32(v);
        continue;
      }
#endif
      dst[p] = bicubic_read(src, t);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Backward kernels. Same pointers as forward plus `gout` (block of grad_output, channel 0),
// `gin` (image n's grad_input accumulator [C, H, W]) and `ggrid` (block of grad_grid). Channel
// by channel as in forward; the grid gradient of each pixel is summed over channels in order.

template <PaddingMode P, bool AC>
void bilinear_backward_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                             const float* in, const float* grid, const float* gout, float* gin,
                             float* ggrid, std::int64_t count) {
  BilinearTaps taps[kCubicBlock];
  float mult[2][kCubicBlock];
  float acc[2][kCubicBlock];
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  for (std::int64_t p = 0; p < count; ++p) {
    const float x = ax.apply_with_grad(grid[2 * p], &mult[0][p]);
    const float y = ay.apply_with_grad(grid[2 * p + 1], &mult[1][p]);
    taps[p] = detail::bilinear_taps(x, y, h, w);
    acc[0][p] = acc[1][p] = 0.0f;
  }
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t c = 0; c < g.c; ++c) {
    const float* src = in + c * in_plane;
    const float* go = gout + c * out_plane;
    float* gi = gin + c * in_plane;
    const bool ahead = c + 1 < g.c;
    for (std::int64_t p = 0; p < count; ++p) {
      const BilinearTaps& t = taps[p];
      if ((p & 3) == 0) {
        // The next channel reads and scatters at the same offsets of the next planes; nothing
        // fetched the first plane, so run a little ahead in it.
        const std::int64_t plane = ahead ? in_plane : 0;
        const BilinearTaps* f = ahead ? &t : (c == 0 && p + kLookahead < count ? &taps[p + kLookahead] : nullptr);
        if (f != nullptr) {
          prefetch_read(src + plane + f->offset[0]);
          prefetch_read(src + plane + f->offset[2]);
          prefetch_write(gi + plane + f->offset[0]);
          prefetch_write(gi + plane + f->offset[2]);
        }
      }
      const float d = go[p];
      const float north = t.ly, south = 1.0f - t.ly, west = t.lx, east = 1.0f - t.lx;
      float v[4];
      if (t.inside == kAllInside) {
        for (int k = 0; k < 4; ++k) {
          gi[t.offset[k]] += t.weight[k] * d;
          v[k] = src[t.offset[k]];
        }
      } else {
        for (int k = 0; k < 4; ++k) {
          const bool inside = (t.inside >> k) & 1u;
          if (inside) gi[t.offset[k]] += t.weight[k] * d;
          v[k] = inside ? src[t.offset[k]] : 0.0f;
        }
      }
      acc[0][p] += ((v[1] - v[0]) * south + (v[3] - v[2]) * north) * d;
      acc[1][p] += ((v[2] - v[0]) * east + (v[3] - v[1]) * west) * d;
    }
  }
  for (std::int64_t p = 0; p < count; ++p) {
    ggrid[2 * p] = acc[0][p] * mult[0][p];
    ggrid[2 * p + 1] = acc[1][p] * mult[1][p];
  }
}

template <PaddingMode P, bool AC>
void nearest_backward_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                            const float* /*in*/, const float* grid, const float* gout, float* gin,
                            float* ggrid, std::int64_t count) {
  alignas(64) std::int32_t off[kCubicBlock];
  alignas(64) std::int32_t ok[kCubicBlock];
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int32_t xi = to_index(std::nearbyint(ax.apply(grid[2 * p])));
    const std::int32_t yi = to_index(std::nearbyint(ay.apply(grid[2 * p + 1])));
    const std::int32_t inside = static_cast<std::uint32_t>(xi) < static_cast<std::uint32_t>(w)
                                    ? (static_cast<std::uint32_t>(yi) < static_cast<std::uint32_t>(h)
                                           ? 1 : 0)
                                    : 0;
    ok[p] = inside;
    off[p] = inside ? yi * w + xi : 0;
    ggrid[2 * p] = 0.0f;  // nearest has no gradient with respect to the grid
    ggrid[2 * p + 1] = 0.0f;
  }
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t c = 0; c < g.c; ++c) {
    const float* go = gout + c * out_plane;
    float* gi = gin + c * in_plane;
    const bool ahead = c + 1 < g.c;
    for (std::int64_t p = 0; p < count; ++p) {
      // The next channel scatters to the same offsets of the next plane: fetch them for write.
      if ((p & 3) == 0) {
        if (ahead) prefetch_write(gi + in_plane + off[p]);
        // Nothing fetched the first plane: run a little ahead in it.
        if (c == 0 && p + kLookahead < count) prefetch_write(gi + off[p + kLookahead]);
      }
      if (ok[p]) gi[off[p]] += go[p];
    }
  }
}

template <PaddingMode P, bool AC>
void bicubic_backward_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                            const float* in, const float* grid, const float* gout, float* gin,
                            float* ggrid, std::int64_t count) {
  CubicTaps taps[kCubicBlock];
  float dx[kCubicBlock][4], dy[kCubicBlock][4];
  float acc[2][kCubicBlock];
  for (std::int64_t p = 0; p < count; ++p) {
    cubic_taps(ax, ay, grid[2 * p], grid[2 * p + 1], taps[p]);
    cubic_weight_grads(taps[p].tx, dx[p]);
    cubic_weight_grads(taps[p].ty, dy[p]);
    acc[0][p] = acc[1][p] = 0.0f;
  }
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t c = 0; c < g.c; ++c) {
    const float* src = in + c * in_plane;
    const float* go = gout + c * out_plane;
    float* gi = gin + c * in_plane;
    for (std::int64_t p = 0; p < count; ++p) {
      const CubicTaps& t = taps[p];
      const float d = go[p];
      float gx = acc[0][p], gy = acc[1][p];
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          // An outside tap reads 0 and receives nothing, but still multiplies into the sums
          // (NaN weights then give NaN, as in PyTorch).
          const bool inside = ((t.col_in >> i) & 1u) && ((t.row_in >> j) & 1u);
          const std::int32_t o = t.row[j] + t.col[i];
          if (inside) gi[o] += d * t.wx[i] * t.wy[j];
          const float v = inside ? src[o] : 0.0f;
          gx -= v * d * dx[p][i] * t.wy[j];
          gy -= v * d * dy[p][j] * t.wx[i];
        }
      }
      acc[0][p] = gx;
      acc[1][p] = gy;
    }
  }
  for (std::int64_t p = 0; p < count; ++p) {
    ggrid[2 * p] = acc[0][p] * ax.scale();
    ggrid[2 * p + 1] = acc[1][p] * ay.scale();
  }
}
// ---------------------------------------------------------------------------------------------
// Dispatch on (padding, align_corners) to compile-time constants.
template <class Fn>
void with_axis_type(PaddingMode padding, bool align_corners, Fn&& fn) {
  auto go = [&](auto pad_tag) {
    constexpr PaddingMode kPad = decltype(pad_tag)::value;
    if (align_corners) {
      fn(static_cast<Axis<kPad, true>*>(nullptr));
    } else {
      fn(static_cast<Axis<kPad, false>*>(nullptr));
    }
  };
  switch (padding) {
    case PaddingMode::zeros:
      go(std::integral_constant<PaddingMode, PaddingMode::zeros>{});
      break;
    case PaddingMode::border:
      go(std::integral_constant<PaddingMode, PaddingMode::border>{});
      break;
    case PaddingMode::reflection:
      go(std::integral_constant<PaddingMode, PaddingMode::reflection>{});
      break;
  }
}

Geometry validate(const Tensor& input, const Tensor& grid, const char* where) {
  check_rank(input, 4, "input", where);
  check_rank(grid, 4, "grid", where);
  const auto s = input.nchw("input");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, where,
               ": tensor 'input' expected non-empty spatial dimensions, got ",
               to_string(input.shape()));
  CVATTN_CHECK(grid.dim(0) == s.n && grid.dim(3) == 2, ShapeError, where, ": tensor 'grid' expected ",
               to_string({s.n, kAny, kAny, 2}), " (batch of 'input' ", to_string(input.shape()),
               "), got ", to_string(grid.shape()));
  return {s.n, s.c, s.h, s.w, grid.dim(1), grid.dim(2)};
}

void check_mode(const GridSampleOptions& options, const char* where) {
  const auto m = static_cast<int>(options.mode());
  const auto p = static_cast<int>(options.padding_mode());
  CVATTN_CHECK(m >= 0 && m <= 2, ValueError, where, ": unknown interpolation mode ", m);
  CVATTN_CHECK(p >= 0 && p <= 2, ValueError, where, ": unknown padding mode ", p);
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleOptions& options) {
  if (input.rank() == 5) return grid_sample3d(input, grid, options);  // volumetric: sampling3d.hpp
  const char* where = "grid_sample";
  check_mode(options, where);
  const Geometry g = validate(input, grid, where);
  Tensor output = Tensor::empty({g.n, g.c, g.ho, g.wo});
  if (output.numel() == 0) return output;
  const float* in = input.data();
  const float* gr = grid.data();
  float* out = output.data();
  const Interpolation mode = options.mode();
  const std::int64_t block = mode == Interpolation::bicubic ? kCubicBlock : kBlock;
  const std::int64_t blocks = g.blocks(block);

  with_axis_type(options.padding_mode(), options.align_corners(), [&](auto* tag) {
    using AxisT = std::remove_pointer_t<decltype(tag)>;
    const AxisT ax(g.w), ay(g.h);
    detail::parallel_for(g.n * blocks, [&](std::int64_t task) {
      const std::int64_t n = task / blocks;
      const std::int64_t p0 = (task % blocks) * block;
      const std::int64_t count = std::min(block, g.out_plane() - p0);
      const float* in_n = in + n * g.c * g.in_plane();
      const float* grid_b = gr + (n * g.out_plane() + p0) * 2;
      float* out_b = out + n * g.c * g.out_plane() + p0;
      switch (mode) {
        case Interpolation::bilinear:
          bilinear_block(g, ax, ay, in_n, grid_b, out_b, count);
          break;
        case Interpolation::nearest:
          nearest_block(g, ax, ay, in_n, grid_b, out_b, count);
          break;
        case Interpolation::bicubic:
          bicubic_block(g, ax, ay, in_n, grid_b, out_b, count);
          break;
      }
    });
  });
  return output;
}

GridSampleGrads grid_sample_backward(const Tensor& input, const Tensor& grid,
                                     const Tensor& grad_output,
                                     const GridSampleOptions& options) {
  if (input.rank() == 5) return grid_sample3d_backward(input, grid, grad_output, options);
  const char* where = "grid_sample_backward";
  check_mode(options, where);
  const Geometry g = validate(input, grid, where);
  check_defined(grad_output, "grad_output", where);
  CVATTN_CHECK(grad_output.shape() == Shape({g.n, g.c, g.ho, g.wo}), ShapeError, where,
               ": tensor 'grad_output' expected ", to_string({g.n, g.c, g.ho, g.wo}),
               " (the shape of grid_sample's output), got ", to_string(grad_output.shape()));
  // grad_input is zeroed image by image right before its scatter (below), while still cached.
  // Every kernel writes all of grad_grid.
  GridSampleGrads grads{Tensor::empty(input.shape()), Tensor::empty(grid.shape())};
  if (g.n == 0 || g.out_plane() == 0) {
    grads.grad_input.fill(0.0f);
    return grads;
  }

  const float* in = input.data();
  const float* gr = grid.data();
  const float* gout = grad_output.data();
  float* gin = grads.grad_input.data();
  float* ggrid = grads.grad_grid.data();
  const std::int64_t blocks = g.blocks(kCubicBlock);
  const std::int64_t image = g.c * g.in_plane();

  // Scatter into grad_input without races: whole images per task when there are enough of
  // them; otherwise every worker accumulates into its own copy, summed afterwards.
  const std::int64_t threads = detail::max_threads();
  const std::int64_t tasks = g.n * blocks;
  const std::int64_t workers = (threads > 1 && g.n < threads) ? std::min(threads, tasks) : 1;
  std::vector<Tensor> partial;
  for (std::int64_t t = 1; t < workers; ++t) partial.push_back(Tensor::zeros(input.shape()));

  with_axis_type(options.padding_mode(), options.align_corners(), [&](auto* tag) {
    using AxisT = std::remove_pointer_t<decltype(tag)>;
    const AxisT ax(g.w), ay(g.h);
    const Interpolation mode = options.mode();
    auto run_task = [&](std::int64_t task, float* gin_all) {
      const std::int64_t n = task / blocks;
      const std::int64_t p0 = (task % blocks) * kCubicBlock;
      const std::int64_t count = std::min(kCubicBlock, g.out_plane() - p0);
      const float* in_n = in + n * image;
      const float* grid_b = gr + (n * g.out_plane() + p0) * 2;
      const float* gout_b = gout + n * g.c * g.out_plane() + p0;
      float* gin_n = gin_all + n * image;
      float* ggrid_b = ggrid + (n * g.out_plane() + p0) * 2;
      switch (mode) {
        case Interpolation::bilinear:
          bilinear_backward_block(g, ax, ay, in_n, grid_b, gout_b, gin_n, ggrid_b, count);
          break;
        case Interpolation::nearest:
          nearest_backward_block(g, ax, ay, in_n, grid_b, gout_b, gin_n, ggrid_b, count);
          break;
        case Interpolation::bicubic:
          bicubic_backward_block(g, ax, ay, in_n, grid_b, gout_b, gin_n, ggrid_b, count);
          break;
      }
    };
    if (workers == 1) {
      detail::parallel_for(g.n, [&](std::int64_t n) {
        std::fill(gin + n * image, gin + (n + 1) * image, 0.0f);
        for (std::int64_t b = 0; b < blocks; ++b) run_task(n * blocks + b, gin);
      });
    } else {
      grads.grad_input.fill(0.0f);
      detail::parallel_for(workers, [&](std::int64_t t) {
        float* target = t == 0 ? gin : partial[static_cast<std::size_t>(t - 1)].data();
        for (std::int64_t task = tasks * t / workers; task < tasks * (t + 1) / workers; ++task) {
          run_task(task, target);
        }
      });
    }
  });

  if (!partial.empty()) {
    const std::int64_t total = grads.grad_input.numel();
    detail::parallel_chunks(total, [&](std::int64_t begin, std::int64_t end) {
      for (const Tensor& part : partial) {
        const float* src = part.data();
        for (std::int64_t i = begin; i < end; ++i) gin[i] += src[i];
      }
    });
  }
  return grads;
}

}  // namespace cvattn::functional

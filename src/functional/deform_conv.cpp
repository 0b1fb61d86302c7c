// deform_conv2d (docs/modules.md §10.1) as a deformable im2col feeding a GEMM.
//
// Layout of the work. A round of images is first copied channels-last ([H*W + 1, Cin] per image,
// the extra pixel all zeros), so that one bilinear sample of one offset group is four contiguous
// channel vectors: building the column of a (pixel, tap) is then an axpy over channels with no
// gathers. The taps (corner pixels and mask-scaled weights) of a chunk of output pixels are
// computed once per (offset group, kernel tap) and reused for all of the group's channels; a
// corner outside the image points at the zero pixel, so no per-channel test remains. Columns are
// stored [pixel, (tap, channel)]; a register-blocked kernel multiplies them by the weight packed in
// panels of 16 output channels [panel, (tap, channel), 16], broadcasting one column entry per
// pixel against two vectors of output channels. Each thread owns one column block of about
// kSlotBytes; all blocks together stay under kDeformConvWorkspaceCap whatever the input.
#include "cvattn/functional/deform_conv.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/parallel_for.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/bilinear_taps.hpp"
#include "functional/detail/conv_kernels.hpp"
#include "functional/detail/tasks.hpp"
#include "functional/detail/window.hpp"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define CVATTN_DEFORM_AVX2 1
#else
#define CVATTN_DEFORM_AVX2 0
#endif

namespace cvattn::functional {
namespace {

using detail::ceil_div;

constexpr const char* kWhere = "deform_conv2d";
// Column block per thread: small enough to stay in L2 between being written and being read by the
// GEMM, large enough for about a hundred pixels at the usual 3x3x64 reduction.
constexpr std::int64_t kSlotBytes = std::int64_t{256} << 10;
// Fewer pixels per GEMM waste its register blocking; a deeper reduction is split instead.
constexpr std::int64_t kMinCols = 32;
// Channels-last copies made at once: several small images share one parallel region.
constexpr std::int64_t kRoundBytes = std::int64_t{16} << 20;
// The GEMM kernel's register tile: kTileRows pixels x kPanel output channels.
constexpr std::int64_t kPanel = 16;
constexpr int kTileRows = 6;

struct Geometry {
  std::int64_t n, cin, h, w;
  std::int64_t cout, kh, kw, taps;
  std::int64_t sh, sw, ph, pw, dh, dw;
  std::int64_t ho, wo;
  std::int64_t go, cin_o;          // offset groups and channels per offset group
  std::int64_t gw, cin_g, cout_g;  // weight groups and channels per weight group
  bool masked;
  [[nodiscard]] std::int64_t positions() const { return ho * wo; }
  [[nodiscard]] std::int64_t reduction() const { return taps * cin_g; }
};

// How the work of one call is cut: pixels per chunk, reduction columns per GEMM, images per round.
struct Plan {
  std::int64_t cols;   // output pixels per chunk
  std::int64_t r_blk;  // reduction length per column block
  std::int64_t round;  // images copied channels-last at once
};

Plan make_plan(const Geometry& g) {
  const std::int64_t threads = std::max(1, cvattn::detail::max_threads());
  const std::int64_t slot_floats =
      std::max<std::int64_t>(1, std::min(kSlotBytes, kDeformConvWorkspaceCap / threads) / 4);
  Plan plan{};
  const std::int64_t r = g.reduction();
  plan.r_blk = std::min(r, std::max<std::int64_t>(1, slot_floats / kMinCols));
  const std::int64_t p = g.positions();
  plan.cols = std::min(p, std::max<std::int64_t>(1, slot_floats / plan.r_blk));
  const std::int64_t image_bytes = (g.h * g.w + 1) * g.cin * 4;
  plan.round = std::clamp<std::int64_t>(kRoundBytes / std::max<std::int64_t>(image_bytes, 1), 1,
                                        g.n);
  // Enough tasks for every thread (only ever shrinks the chunk, so the cap still holds).
  const std::int64_t wanted = detail::kTasksPerThread * threads;
  if (threads > 1 && plan.round * ceil_div(p, plan.cols) < wanted) {
    const std::int64_t per_image = ceil_div(wanted, plan.round);
    plan.cols = std::min(plan.cols, std::max(std::min(plan.cols, kMinCols), ceil_div(p, per_image)));
  }
  // Whole register tiles: a partial tile runs the GEMM kernel below its peak.
  if (plan.cols > kTileRows) plan.cols -= plan.cols % kTileRows;
  return plan;
}

// Taps of one (offset group, kernel tap) for a chunk of output pixels, structure of arrays:
// corner q of pixel p is channels-last pixel index[q][p] (the zero pixel when that corner, or the
// whole sample, lies outside) with weight[q][p] (bilinear weight times the mask).
struct TapBlock {
  std::int32_t* index[4];
  float* weight[4];
};

// The regular sampling grid before offsets, as torchvision computes it: the integer position
// converted to float. y[i * Ho + oy] = oy*sh - ph + i*dh and x[j * Wo + ox] = ox*sw - pw + j*dw.
struct BaseGrid {
  std::vector<float> y, x;
  explicit BaseGrid(const Geometry& g)
      : y(static_cast<std::size_t>(g.kh * g.ho)), x(static_cast<std::size_t>(g.kw * g.wo)) {
    for (std::int64_t i = 0; i < g.kh; ++i) {
      for (std::int64_t oy = 0; oy < g.ho; ++oy) {
        y[static_cast<std::size_t>(i * g.ho + oy)] =
            static_cast<float>(oy * g.sh - g.ph + i * g.dh);
      }
    }
    for (std::int64_t j = 0; j < g.kw; ++j) {
      for (std::int64_t ox = 0; ox < g.wo; ++ox) {
        x[static_cast<std::size_t>(j * g.wo + ox)] =
            static_cast<float>(ox * g.sw - g.pw + j * g.dw);
      }
    }
  }
};

// Taps of `count` consecutive output pixels of one row: base y `by`, base x bx[t], offsets
// dy[t], dx[t] and (Masked) mask m[t]; written to tb at position `at`.
template <bool Masked>
void taps_of_row(float by, const float* __restrict bx, const float* __restrict dy,
                 const float* __restrict dx, const float* __restrict m, std::int64_t count,
                 std::int32_t h, std::int32_t w, const TapBlock& tb, std::int64_t at) {
  const std::int32_t zero_pixel = h * w;
  std::int32_t* __restrict i0 = tb.index[0] + at;
  std::int32_t* __restrict i1 = tb.index[1] + at;
  std::int32_t* __restrict i2 = tb.index[2] + at;
  std::int32_t* __restrict i3 = tb.index[3] + at;
  float* __restrict w0 = tb.weight[0] + at;
  float* __restrict w1 = tb.weight[1] + at;
  float* __restrict w2 = tb.weight[2] + at;
  float* __restrict w3 = tb.weight[3] + at;
  std::int64_t t0 = 0;
#if CVATTN_DEFORM_AVX2
  // GCC vectorises the loops below 4 wide and computes every tap twice; one 8-wide pass with the
  // same float operations. Only in-range samples keep their corners, and for those floor(x) lies
  // in [-1, w-1] (floor(y) in [-1, h-1]), so one signed test per side tells a corner inside.
  {
    const __m256 hf = _mm256_set1_ps(static_cast<float>(h));
    const __m256 wf = _mm256_set1_ps(static_cast<float>(w));
    const __m256 minus1 = _mm256_set1_ps(-1.0f);
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 byv = _mm256_set1_ps(by);
    const __m256i wi = _mm256_set1_epi32(w);
    const __m256i w_last = _mm256_set1_epi32(w - 1);
    const __m256i h_last = _mm256_set1_epi32(h - 1);
    const __m256i neg1 = _mm256_set1_epi32(-1);
    const __m256i zp = _mm256_set1_epi32(zero_pixel);
    const __m256i one_i = _mm256_set1_epi32(1);
    for (; t0 + 8 <= count; t0 += 8) {
      const __m256 py = _mm256_add_ps(byv, _mm256_loadu_ps(dy + t0));
      const __m256 px = _mm256_add_ps(_mm256_loadu_ps(bx + t0), _mm256_loadu_ps(dx + t0));
      const __m256 ok = _mm256_and_ps(
          _mm256_and_ps(_mm256_cmp_ps(px, minus1, _CMP_GT_OQ), _mm256_cmp_ps(px, wf, _CMP_LT_OQ)),
          _mm256_and_ps(_mm256_cmp_ps(py, minus1, _CMP_GT_OQ), _mm256_cmp_ps(py, hf, _CMP_LT_OQ)));
      const __m256 x0 = _mm256_floor_ps(px);
      const __m256 y0 = _mm256_floor_ps(py);
      const __m256 lx = _mm256_sub_ps(px, x0);
      const __m256 ly = _mm256_sub_ps(py, y0);
      const __m256 hx = _mm256_sub_ps(one, lx);
      const __m256 hy = _mm256_sub_ps(one, ly);
      __m256 q0 = _mm256_and_ps(ok, _mm256_mul_ps(hy, hx));
      __m256 q1 = _mm256_and_ps(ok, _mm256_mul_ps(hy, lx));
      __m256 q2 = _mm256_and_ps(ok, _mm256_mul_ps(ly, hx));
      __m256 q3 = _mm256_and_ps(ok, _mm256_mul_ps(ly, lx));
      if constexpr (Masked) {
        const __m256 sc = _mm256_loadu_ps(m + t0);
        q0 = _mm256_mul_ps(sc, q0), q1 = _mm256_mul_ps(sc, q1);
        q2 = _mm256_mul_ps(sc, q2), q3 = _mm256_mul_ps(sc, q3);
      }
      _mm256_storeu_ps(w0 + t0, q0);
      _mm256_storeu_ps(w1 + t0, q1);
      _mm256_storeu_ps(w2 + t0, q2);
      _mm256_storeu_ps(w3 + t0, q3);
      // Out-of-range lanes may convert to anything: their corners are all replaced below.
      const __m256i xi = _mm256_cvttps_epi32(x0);
      const __m256i yi = _mm256_cvttps_epi32(y0);
      const __m256i oki = _mm256_castps_si256(ok);
      const __m256i west = _mm256_and_si256(oki, _mm256_cmpgt_epi32(xi, neg1));
      const __m256i east = _mm256_and_si256(oki, _mm256_cmpgt_epi32(w_last, xi));
      const __m256i north = _mm256_cmpgt_epi32(yi, neg1);
      const __m256i south = _mm256_cmpgt_epi32(h_last, yi);
      const __m256i nw = _mm256_add_epi32(_mm256_mullo_epi32(yi, wi), xi);
      const __m256i sw = _mm256_add_epi32(nw, wi);
      const auto put = [&](std::int32_t* dst, __m256i idx, __m256i use) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + t0),
                            _mm256_blendv_epi8(zp, idx, use));
      };
      put(i0, nw, _mm256_and_si256(west, north));
      put(i1, _mm256_add_epi32(nw, one_i), _mm256_and_si256(east, north));
      put(i2, sw, _mm256_and_si256(west, south));
      put(i3, _mm256_add_epi32(sw, one_i), _mm256_and_si256(east, south));
    }
  }
#endif
  // Two passes over the same taps: GCC vectorises each, but not one loop storing all eight.
  for (std::int64_t t = t0; t < count; ++t) {
    const float py = by + dy[t];
    const float px = bx[t] + dx[t];
    const float scale = Masked ? m[t] : 1.0f;
    const std::uint32_t ok = cvattn::detail::deform_sample_in_range(px, py, h, w);
    const cvattn::detail::BilinearTaps s = cvattn::detail::bilinear_taps(px, py, h, w);
    // torchvision: mask * (sum of weight * corner), a sample out of range being 0 (so a NaN mask
    // still poisons it).
    w0[t] = scale * (ok ? s.weight[0] : 0.0f);
    w1[t] = scale * (ok ? s.weight[1] : 0.0f);
    w2[t] = scale * (ok ? s.weight[2] : 0.0f);
    w3[t] = scale * (ok ? s.weight[3] : 0.0f);
  }
  for (std::int64_t t = t0; t < count; ++t) {
    const float py = by + dy[t];
    const float px = bx[t] + dx[t];
    const std::uint32_t ok = cvattn::detail::deform_sample_in_range(px, py, h, w);
    const cvattn::detail::BilinearTaps s = cvattn::detail::bilinear_taps(px, py, h, w);
    // A corner outside the image, or of a sample out of range, reads the zero pixel.
    const std::uint32_t inside = ok ? s.inside : 0u;
    i0[t] = (inside & 1u) ? s.offset[0] : zero_pixel;
    i1[t] = (inside & 2u) ? s.offset[1] : zero_pixel;
    i2[t] = (inside & 4u) ? s.offset[2] : zero_pixel;
    i3[t] = (inside & 8u) ? s.offset[3] : zero_pixel;
  }
}

void compute_taps(const Geometry& g, const BaseGrid& grid, const float* offset, const float* mask,
                  std::int64_t grp, std::int64_t k, std::int64_t p0, std::int64_t cols,
                  const TapBlock& tb) {
  const std::int64_t p_all = g.positions();
  const std::int64_t i = k / g.kw;
  const std::int64_t j = k % g.kw;
  const float* dy = offset + (grp * 2 * g.taps + 2 * k) * p_all;
  const float* dx = dy + p_all;
  const float* m = g.masked ? mask + (grp * g.taps + k) * p_all : nullptr;
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  const float* bx = grid.x.data() + j * g.wo;
  std::int64_t p = p0;
  const std::int64_t end = p0 + cols;
  while (p < end) {  // one output row segment at a time, so the inner loop is straight
    const std::int64_t oy = p / g.wo;
    const std::int64_t ox0 = p - oy * g.wo;
    const std::int64_t count = std::min(g.wo - ox0, end - p);
    const float by = grid.y[static_cast<std::size_t>(i * g.ho + oy)];
    if (m) {
      taps_of_row<true>(by, bx + ox0, dy + p, dx + p, m + p, count, h, w, tb, p - p0);
    } else {
      taps_of_row<false>(by, bx + ox0, dy + p, dx + p, nullptr, count, h, w, tb, p - p0);
    }
    p += count;
  }
}

// col[p, 0:len] = sum_q weight[q][p] * image[index[q][p], 0:len] for the chunk's pixels, where
// `image` points at the first channel of the range in the channels-last copy.
template <bool Aligned>
void scatter_rows(const TapBlock& tb, std::int64_t cols, const float* image,
                  std::int64_t pixel_stride, std::int64_t len, float* col,
                  std::int64_t col_stride) {
  for (std::int64_t p = 0; p < cols; ++p) {
    const float* __restrict s0 = image + tb.index[0][p] * pixel_stride;
    const float* __restrict s1 = image + tb.index[1][p] * pixel_stride;
    const float* __restrict s2 = image + tb.index[2][p] * pixel_stride;
    const float* __restrict s3 = image + tb.index[3][p] * pixel_stride;
    const float w0 = tb.weight[0][p], w1 = tb.weight[1][p];
    const float w2 = tb.weight[2][p], w3 = tb.weight[3][p];
    float* __restrict d = col + p * col_stride;
    std::int64_t c = 0;
#if CVATTN_DEFORM_AVX2
    // GCC vectorises the loop below with 128-bit vectors only; the same operations 8 wide.
    const __m256 v0 = _mm256_set1_ps(w0), v1 = _mm256_set1_ps(w1);
    const __m256 v2 = _mm256_set1_ps(w2), v3 = _mm256_set1_ps(w3);
    for (; c + 8 <= len; c += 8) {
      __m256 acc = _mm256_mul_ps(v0, _mm256_loadu_ps(s0 + c));
      acc = _mm256_fmadd_ps(v1, _mm256_loadu_ps(s1 + c), acc);
      acc = _mm256_fmadd_ps(v2, _mm256_loadu_ps(s2 + c), acc);
      acc = _mm256_fmadd_ps(v3, _mm256_loadu_ps(s3 + c), acc);
      // This CPU tuning splits unaligned 256-bit stores in two; aligned ones stay whole.
      if constexpr (Aligned) {
        _mm256_store_ps(d + c, acc);
      } else {
        _mm256_storeu_ps(d + c, acc);
      }
    }
#endif
    for (; c < len; ++c) {
      d[c] = std::fma(w3, s3[c], std::fma(w2, s2[c], std::fma(w1, s1[c], w0 * s0[c])));
    }
  }
}

void scatter_samples(const TapBlock& tb, std::int64_t cols, const float* image,
                     std::int64_t pixel_stride, std::int64_t len, float* col,
                     std::int64_t col_stride) {
  const auto at = reinterpret_cast<std::uintptr_t>(col);
  if (at % 32 == 0 && col_stride % 8 == 0) {
    scatter_rows<true>(tb, cols, image, pixel_stride, len, col, col_stride);
  } else {
    scatter_rows<false>(tb, cols, image, pixel_stride, len, col, col_stride);
  }
}

// Channels-last copy of images [C, H*W] -> [H*W + 1, C], the last pixel zero, in tiles of
// kTile pixels (4x4 blocks transposed in SSE registers where available).
void to_channels_last(const Geometry& g, const float* in, std::int64_t images, float* out) {
  constexpr std::int64_t kTile = 32;
  const std::int64_t hw = g.h * g.w;
  const std::int64_t cin = g.cin;
  const std::int64_t tiles = ceil_div(hw + 1, kTile);
  // Handed out dynamically like the pixel chunks of deform_conv2d, for the same reason.
  const std::int64_t tasks = images * tiles;
  detail::for_each_task_dynamic(tasks, detail::slot_count(tasks), [&](std::int64_t t, auto) {
    const std::int64_t img = t / tiles;
    const std::int64_t p0 = (t % tiles) * kTile;
    const std::int64_t p1 = std::min(hw, p0 + kTile);
    const float* src = in + img * cin * hw;
    float* dst = out + img * (hw + 1) * cin;
    std::int64_t c = 0;
#if CVATTN_DEFORM_AVX2
    for (; c + 4 <= cin; c += 4) {
      const float* s = src + c * hw;
      // Each row is read for a few lines only, too short for the hardware prefetcher: fetch the
      // rows of the group of channels after next while this one is transposed.
      if (c + 12 <= cin) {
        const float* ahead = s + 8 * hw;
        for (std::int64_t r = 0; r < 4; ++r) {
          for (std::int64_t q = p0; q < p1; q += 16) {
            _mm_prefetch(reinterpret_cast<const char*>(ahead + r * hw + q), _MM_HINT_T0);
          }
        }
      }
      std::int64_t p = p0;
      for (; p + 4 <= p1; p += 4) {
        __m128 r0 = _mm_loadu_ps(s + p);
        __m128 r1 = _mm_loadu_ps(s + hw + p);
        __m128 r2 = _mm_loadu_ps(s + 2 * hw + p);
        __m128 r3 = _mm_loadu_ps(s + 3 * hw + p);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(dst + p * cin + c, r0);
        _mm_storeu_ps(dst + (p + 1) * cin + c, r1);
        _mm_storeu_ps(dst + (p + 2) * cin + c, r2);
        _mm_storeu_ps(dst + (p + 3) * cin + c, r3);
      }
      for (; p < p1; ++p) {
        for (std::int64_t cc = 0; cc < 4; ++cc) dst[p * cin + c + cc] = s[cc * hw + p];
      }
    }
#endif
    for (; c < cin; ++c) {
      const float* s = src + c * hw;
      for (std::int64_t p = p0; p < p1; ++p) dst[p * cin + c] = s[p];
    }
    if (p0 + kTile > hw) std::fill(dst + hw * cin, dst + (hw + 1) * cin, 0.0f);
  });
}

// Weight [Cout, Cin_g, kh, kw] packed per weight group into panels of kPanel output channels:
// packed[(gi * panels + q) * R * kPanel + r * kPanel + lane] = weight of output channel
// gi*Cout_g + q*kPanel + lane (0 past Cout_g) at reduction index r = tap * Cin_g + channel.
void pack_weight(const Geometry& g, const float* weight, std::int64_t panels, float* packed) {
  const std::int64_t r_all = g.reduction();
  const std::int64_t per_oc = g.cin_g * g.taps;  // weight floats per output channel
  // Writes in order; reads 16 rows (one per lane) that advance together.
  for (std::int64_t gi = 0; gi < g.gw; ++gi) {
    for (std::int64_t q = 0; q < panels; ++q) {
      float* dst = packed + (gi * panels + q) * r_all * kPanel;
      const std::int64_t oc0 = q * kPanel;
      const std::int64_t lanes = std::min(kPanel, g.cout_g - oc0);
      const float* src = weight + (gi * g.cout_g + oc0) * per_oc;
      for (std::int64_t k = 0; k < g.taps; ++k) {
        for (std::int64_t c = 0; c < g.cin_g; ++c) {
          float* d = dst + (k * g.cin_g + c) * kPanel;
          const float* s = src + c * g.taps + k;
          for (std::int64_t lane = 0; lane < lanes; ++lane) d[lane] = s[lane * per_oc];
          for (std::int64_t lane = lanes; lane < kPanel; ++lane) d[lane] = 0.0f;
        }
      }
    }
  }
}

#if CVATTN_DEFORM_AVX2
// Writes a full 6-pixel tile's 8 output channels v[i] (pixel i, channels 0-7) to out[oc * ldo + i]
// as bias[oc] + v (bias given) or out + v: transposed in registers, 4 + 2 floats per channel,
// instead of 48 scalar read-modify-writes.
inline void store_tile6(const __m256* v, float* out, std::int64_t ldo, const float* bias) {
  const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
  const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
  // Pixels 0-3 of channel c (c + 4 in the upper half) in s[c]; pixels 4-5 of channels (0, 1),
  // (2, 3) as pairs in u0, u1 (channels + 4 in the upper half).
  const __m256 s[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                       _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
  const __m256 u0 = _mm256_unpacklo_ps(v[4], v[5]), u1 = _mm256_unpackhi_ps(v[4], v[5]);
  for (int half = 0; half < 2; ++half) {
    const __m128 pair01 = half ? _mm256_extractf128_ps(u0, 1) : _mm256_castps256_ps128(u0);
    const __m128 pair23 = half ? _mm256_extractf128_ps(u1, 1) : _mm256_castps256_ps128(u1);
    for (int c = 0; c < 4; ++c) {
      const int oc = half * 4 + c;
      const __m128 p03 = half ? _mm256_extractf128_ps(s[c], 1) : _mm256_castps256_ps128(s[c]);
      const __m128 pair = c < 2 ? pair01 : pair23;
      const __m128 p45 = (c & 1) ? _mm_movehl_ps(pair, pair) : pair;
      float* o = out + oc * ldo;
      __m128 b03, b45;
      if (bias) {
        b03 = b45 = _mm_set1_ps(bias[oc]);
      } else {
        b03 = _mm_loadu_ps(o);
        b45 = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(o + 4));
      }
      _mm_storeu_ps(o, _mm_add_ps(b03, p03));
      _mm_storel_pi(reinterpret_cast<__m64*>(o + 4), _mm_add_ps(b45, p45));
    }
  }
}
#endif

// out[oc * ldo + i] += sum_r col[i * ldc + r] * panel[r * kPanel + oc] for MR pixels i and the
// first `oc_valid` output channels oc of the panel; with `bias`, out is set to bias[oc] + sum
// instead (the first depth block: saves a pass writing the bias and reading it back).
template <int MR>
void tile_kernel(const float* col, std::int64_t ldc, const float* panel, std::int64_t depth,
                 float* out, std::int64_t ldo, std::int64_t oc_valid, const float* bias) {
  alignas(32) float acc[MR][kPanel];
#if CVATTN_DEFORM_AVX2
  __m256 lo[MR], hi[MR];
  for (int i = 0; i < MR; ++i) lo[i] = _mm256_setzero_ps(), hi[i] = _mm256_setzero_ps();
  for (std::int64_t r = 0; r < depth; ++r) {
    const __m256 w0 = _mm256_loadu_ps(panel + r * kPanel);
    const __m256 w1 = _mm256_loadu_ps(panel + r * kPanel + 8);
    for (int i = 0; i < MR; ++i) {
      const __m256 a = _mm256_broadcast_ss(col + i * ldc + r);
      lo[i] = _mm256_fmadd_ps(a, w0, lo[i]);
      hi[i] = _mm256_fmadd_ps(a, w1, hi[i]);
    }
  }
  if constexpr (MR == 6) {
    if (oc_valid == kPanel) {
      store_tile6(lo, out, ldo, bias);
      store_tile6(hi, out + 8 * ldo, ldo, bias ? bias + 8 : nullptr);
      return;
    }
  }
  for (int i = 0; i < MR; ++i) {
    _mm256_store_ps(acc[i], lo[i]);
    _mm256_store_ps(acc[i] + 8, hi[i]);
  }
#else
  for (int i = 0; i < MR; ++i) {
    for (std::int64_t l = 0; l < kPanel; ++l) acc[i][l] = 0.0f;
  }
  for (std::int64_t r = 0; r < depth; ++r) {
    const float* w = panel + r * kPanel;
    for (int i = 0; i < MR; ++i) {
      const float a = col[i * ldc + r];
      for (std::int64_t l = 0; l < kPanel; ++l) acc[i][l] += a * w[l];
    }
  }
#endif
  if (bias) {
    for (std::int64_t oc = 0; oc < oc_valid; ++oc) {
      float* o = out + oc * ldo;
      for (int i = 0; i < MR; ++i) o[i] = bias[oc] + acc[i][oc];
    }
  } else {
    for (std::int64_t oc = 0; oc < oc_valid; ++oc) {
      float* o = out + oc * ldo;
      for (int i = 0; i < MR; ++i) o[i] += acc[i][oc];
    }
  }
}

// out[oc, p] (row stride ldo) += sum_r col[p, r] * panels[q][r][oc] for pixels p < cols and the
// cout_g output channels spread over the panels (= bias[oc] + sum when bias is given).
void gemm_panels(const float* col, std::int64_t cols, std::int64_t depth, const float* panels,
                 std::int64_t panel_stride, std::int64_t cout_g, float* out, std::int64_t ldo,
                 const float* bias) {
  for (std::int64_t q = 0; q * kPanel < cout_g; ++q) {
    const float* panel = panels + q * panel_stride;
    const float* bq = bias ? bias + q * kPanel : nullptr;
    const std::int64_t oc_valid = std::min(kPanel, cout_g - q * kPanel);
    float* o = out + q * kPanel * ldo;
    std::int64_t p = 0;
    for (; p + kTileRows <= cols; p += kTileRows) {
      tile_kernel<kTileRows>(col + p * depth, depth, panel, depth, o + p, ldo, oc_valid, bq);
    }
    const float* c = col + p * depth;
    switch (cols - p) {
      case 5: tile_kernel<5>(c, depth, panel, depth, o + p, ldo, oc_valid, bq); break;
      case 4: tile_kernel<4>(c, depth, panel, depth, o + p, ldo, oc_valid, bq); break;
      case 3: tile_kernel<3>(c, depth, panel, depth, o + p, ldo, oc_valid, bq); break;
      case 2: tile_kernel<2>(c, depth, panel, depth, o + p, ldo, oc_valid, bq); break;
      case 1: tile_kernel<1>(c, depth, panel, depth, o + p, ldo, oc_valid, bq); break;
      default: break;
    }
  }
}

Geometry validate(const Tensor& input, const Tensor& offset, const Tensor& weight,
                  const Tensor& bias, const Tensor& mask, const DeformConv2dOptions& options) {
  check_rank(input, 4, "input", kWhere);
  check_rank(offset, 4, "offset", kWhere);
  check_rank(weight, 4, "weight", kWhere);
  detail::check_pair(options.stride(), 1, "stride", kWhere);
  detail::check_pair(options.padding(), 0, "padding", kWhere);
  detail::check_pair(options.dilation(), 1, "dilation", kWhere);
  Geometry g{};
  g.n = input.dim(0), g.cin = input.dim(1), g.h = input.dim(2), g.w = input.dim(3);
  g.cout = weight.dim(0), g.kh = weight.dim(2), g.kw = weight.dim(3);
  g.taps = g.kh * g.kw;
  g.sh = options.stride().h, g.sw = options.stride().w;
  g.ph = options.padding().h, g.pw = options.padding().w;
  g.dh = options.dilation().h, g.dw = options.dilation().w;
  const std::string in_shape = to_string(input.shape());
  const std::string w_shape = to_string(weight.shape());
  CVATTN_CHECK(g.kh > 0 && g.kw > 0, ShapeError, kWhere, ": tensor 'weight' ", w_shape,
               " has an empty kernel");
  CVATTN_CHECK(g.taps <= (std::int64_t{1} << 31), ShapeError, kWhere, ": tensor 'weight' ",
               w_shape, " has more kernel taps than an offset tensor can describe");
  CVATTN_CHECK(weight.dim(1) > 0, ShapeError, kWhere, ": tensor 'weight' expected at least one "
               "input channel per group, got ", w_shape);
  CVATTN_CHECK(g.cin > 0, ShapeError, kWhere, ": tensor 'input' expected at least one channel, "
               "got ", in_shape);
  CVATTN_CHECK(g.cin % weight.dim(1) == 0, ShapeError, kWhere, ": tensor 'input' expected a "
               "multiple of ", weight.dim(1), " channels (weight ", w_shape, "), got ", in_shape);
  g.gw = g.cin / weight.dim(1);
  CVATTN_CHECK(g.cout % g.gw == 0, ShapeError, kWhere, ": tensor 'weight' ", w_shape,
               " has ", g.cout, " output channels, not a multiple of its ", g.gw,
               " groups (input channels ", g.cin, " / ", weight.dim(1), ")");
  g.cin_g = weight.dim(1);
  g.cout_g = g.cout / g.gw;

  CVATTN_CHECK(offset.dim(0) == g.n, ShapeError, kWhere, ": tensor 'offset' expected batch ",
               g.n, " (of 'input' ", in_shape, "), got ", to_string(offset.shape()));
  const std::int64_t pair_channels = 2 * g.taps;
  CVATTN_CHECK(offset.dim(1) > 0 && offset.dim(1) % pair_channels == 0, ShapeError, kWhere,
               ": tensor 'offset' expected 2*offset_groups*kh*kw channels (a positive multiple "
               "of ", pair_channels, " for the ", g.kh, "x", g.kw, " kernel of 'weight' ", w_shape,
               "), got ", to_string(offset.shape()));
  g.go = offset.dim(1) / pair_channels;
  CVATTN_CHECK(g.cin % g.go == 0, ShapeError, kWhere, ": the ", g.go,
               " offset groups of 'offset' ", to_string(offset.shape()),
               " must divide the channels of 'input' ", in_shape);
  g.cin_o = g.cin / g.go;

  const std::int64_t eff_h = g.dh * (g.kh - 1) + 1;
  const std::int64_t eff_w = g.dw * (g.kw - 1) + 1;
  CVATTN_CHECK(eff_h <= g.h + 2 * g.ph && eff_w <= g.w + 2 * g.pw, ShapeError, kWhere,
               ": kernel (", g.kh, ", ", g.kw, ") with dilation (", g.dh, ", ", g.dw,
               ") spans (", eff_h, ", ", eff_w, "), larger than the padded input (",
               g.h + 2 * g.ph, ", ", g.w + 2 * g.pw, ") of 'input' ", in_shape);
  g.ho = (g.h + 2 * g.ph - eff_h) / g.sh + 1;
  g.wo = (g.w + 2 * g.pw - eff_w) / g.sw + 1;
  CVATTN_CHECK(offset.dim(2) == g.ho && offset.dim(3) == g.wo, ShapeError, kWhere,
               ": tensor 'offset' expected the output size (", g.ho, ", ", g.wo,
               ") in its last two dimensions, got ", to_string(offset.shape()));
  g.masked = mask.defined();
  if (g.masked) check_shape(mask, {g.n, g.go * g.taps, g.ho, g.wo}, "mask", kWhere);
  if (bias.defined()) check_shape(bias, {g.cout}, "bias", kWhere);
  (void)checked_numel({g.n, g.cout, g.ho, g.wo}, "deform_conv2d output");
  return g;
}

}  // namespace

Tensor deform_conv2d(const Tensor& input, const Tensor& offset, const Tensor& weight,
                     const Tensor& bias, const Tensor& mask, const DeformConv2dOptions& options) {
  check_defined(input, "input", kWhere);
  check_defined(offset, "offset", kWhere);
  check_defined(weight, "weight", kWhere);
  const Geometry g = validate(input, offset, weight, bias, mask, options);
  Tensor out = Tensor::empty({g.n, g.cout, g.ho, g.wo});
  if (out.numel() == 0) return out;

  const std::int64_t p_all = g.positions();
  const std::int64_t r_all = g.reduction();
  const Plan plan = make_plan(g);
  const std::int64_t chunks = ceil_div(p_all, plan.cols);
  const std::int64_t hw1 = g.h * g.w + 1;

  // Everything is allocated (and checked against the tensor cap) before any parallel region;
  // the scratch is kept for the next call (core/workspace.hpp).
  using cvattn::detail::Workspace;
  const std::int64_t panels = ceil_div(g.cout_g, kPanel);
  const Workspace packed({g.gw, panels, r_all, kPanel}, "deform_conv2d (packed weight)");
  pack_weight(g, weight.data(), panels, packed.data());
  const BaseGrid grid(g);
  const Workspace channels_last({plan.round, hw1, g.cin}, "deform_conv2d (channels-last input)");
  const std::int64_t max_tasks = plan.round * chunks;
  const std::int64_t slots = detail::slot_count(max_tasks);
  const Workspace columns({slots, plan.cols * plan.r_blk}, "deform_conv2d (columns)");
  // Per slot: 4 weights and 4 indices per pixel of a chunk (an int32 index fills a float slot).
  static_assert(sizeof(std::int32_t) == sizeof(float));
  const Workspace taps({2, slots, 4, plan.cols}, "deform_conv2d (taps)");
  float* tap_weights = taps.data();
  auto* tap_index = reinterpret_cast<std::int32_t*>(taps.data() + slots * 4 * plan.cols);

  const float* in = input.data();
  const float* off = offset.data();
  const float* msk = g.masked ? mask.data() : nullptr;
  // The first depth block stores bias + sum; zeros without a bias (0 + sum, as fill-then-add).
  std::vector<float> bias_zeros;
  const float* bias_all = bias.defined() ? bias.data() : nullptr;
  if (!bias_all) {
    bias_zeros.assign(static_cast<std::size_t>(g.cout), 0.0f);
    bias_all = bias_zeros.data();
  }
  const float* wp = packed.data();
  float* o = out.data();
  float* cl = channels_last.data();

  for (std::int64_t n0 = 0; n0 < g.n; n0 += plan.round) {
    const std::int64_t images = std::min(plan.round, g.n - n0);
    to_channels_last(g, in + n0 * g.cin * g.h * g.w, images, cl);
    const std::int64_t tasks = images * chunks;
    const auto task = [&](std::int64_t t, std::int64_t slot) {
      const std::int64_t img = t / chunks;
      const std::int64_t ni = n0 + img;
      const std::int64_t p0 = (t % chunks) * plan.cols;
      const std::int64_t cols = std::min(plan.cols, p_all - p0);
      const float* image = cl + img * hw1 * g.cin;
      const float* off_n = off + ni * 2 * g.go * g.taps * p_all;
      const float* msk_n = msk ? msk + ni * g.go * g.taps * p_all : nullptr;
      float* col = columns.data() + slot * plan.cols * plan.r_blk;
      TapBlock tb{};
      for (int q = 0; q < 4; ++q) {
        tb.index[q] = tap_index + (slot * 4 + q) * plan.cols;
        tb.weight[q] = tap_weights + (slot * 4 + q) * plan.cols;
      }
      float* out_n = o + ni * g.cout * p_all;
      std::int64_t have_grp = -1, have_k = -1;  // taps currently in tb
      for (std::int64_t gi = 0; gi < g.gw; ++gi) {
        for (std::int64_t r0 = 0; r0 < r_all; r0 += plan.r_blk) {
          const std::int64_t r1 = std::min(r_all, r0 + plan.r_blk);
          const std::int64_t rl = r1 - r0;
          for (std::int64_t k = r0 / g.cin_g; k * g.cin_g < r1; ++k) {
            // Channels of weight group gi covered by this block at tap k, as absolute channels.
            const std::int64_t a_abs = gi * g.cin_g + std::max(r0 - k * g.cin_g, std::int64_t{0});
            const std::int64_t b_abs = gi * g.cin_g + std::min(r1 - k * g.cin_g, g.cin_g);
            for (std::int64_t grp = a_abs / g.cin_o; grp * g.cin_o < b_abs; ++grp) {
              const std::int64_t a = std::max(a_abs, grp * g.cin_o);
              const std::int64_t e = std::min(b_abs, (grp + 1) * g.cin_o);
              if (grp != have_grp || k != have_k) {
                compute_taps(g, grid, off_n, msk_n, grp, k, p0, cols, tb);
                have_grp = grp, have_k = k;
              }
              scatter_samples(tb, cols, image + a, g.cin, e - a,
                              col + (k * g.cin_g + (a - gi * g.cin_g) - r0), rl);
            }
          }
          gemm_panels(col, cols, rl, wp + (gi * panels * r_all + r0) * kPanel, r_all * kPanel,
                      g.cout_g, out_n + gi * g.cout_g * p_all + p0, p_all,
                      r0 == 0 ? bias_all + gi * g.cout_g : nullptr);
        }
      }
    };
    // Handed out dynamically: a task's output does not depend on the thread that runs it.
    detail::for_each_task_dynamic(tasks, std::min(slots, tasks), task);
  }
  return out;
}

Tensor sampling_positions(const Tensor& offset, Pair2 kernel_size,
                          const std::vector<cv::Point>& points,
                          const DeformConv2dOptions& options) {
  constexpr const char* kFn = "sampling_positions";
  check_rank(offset, 4, "offset", kFn);
  detail::check_pair(kernel_size, 1, "kernel_size", kFn);
  detail::check_pair(options.stride(), 1, "stride", kFn);
  detail::check_pair(options.padding(), 0, "padding", kFn);
  detail::check_pair(options.dilation(), 1, "dilation", kFn);
  const std::int64_t kh = kernel_size.h, kw = kernel_size.w;
  CVATTN_CHECK(kh * kw <= (std::int64_t{1} << 31), ValueError, kFn, ": kernel_size (", kh, ", ",
               kw, ") has more taps than an offset tensor can describe");
  const std::int64_t taps = kh * kw;
  const std::int64_t n = offset.dim(0), ho = offset.dim(2), wo = offset.dim(3);
  CVATTN_CHECK(offset.dim(1) > 0 && offset.dim(1) % (2 * taps) == 0, ShapeError, kFn,
               ": tensor 'offset' expected 2*offset_groups*kh*kw channels (a positive multiple "
               "of ", 2 * taps, " for kernel_size (", kh, ", ", kw, ")), got ",
               to_string(offset.shape()));
  const std::int64_t go = offset.dim(1) / (2 * taps);
  std::vector<cv::Point> all;
  const std::vector<cv::Point>* pts = &points;
  if (points.empty()) {
    all.reserve(static_cast<std::size_t>(ho * wo));
    for (std::int64_t y = 0; y < ho; ++y) {
      for (std::int64_t x = 0; x < wo; ++x) {
        all.emplace_back(static_cast<int>(x), static_cast<int>(y));
      }
    }
    pts = &all;
  }
  for (const cv::Point& pt : *pts) {
    CVATTN_CHECK(pt.x >= 0 && pt.x < wo && pt.y >= 0 && pt.y < ho, ShapeError, kFn,
                 ": point (x=", pt.x, ", y=", pt.y, ") lies outside the ", wo, "x", ho,
                 " output of 'offset' ", to_string(offset.shape()));
  }
  const auto np = static_cast<std::int64_t>(pts->size());
  Tensor out = Tensor::empty({n, go, np, taps, 2});
  const float* src = offset.data();
  float* dst = out.data();
  const std::int64_t plane = ho * wo;
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t g = 0; g < go; ++g) {
      for (std::int64_t p = 0; p < np; ++p) {
        const cv::Point& pt = (*pts)[static_cast<std::size_t>(p)];
        const std::int64_t at = pt.y * wo + pt.x;
        for (std::int64_t k = 0; k < taps; ++k) {
          const std::int64_t i = k / kw, j = k % kw;
          const float* dy = src + ((b * go + g) * 2 * taps + 2 * k) * plane;
          const float* dx = dy + plane;
          float* d = dst + (((b * go + g) * np + p) * taps + k) * 2;
          d[0] = static_cast<float>(pt.y * options.stride().h - options.padding().h +
                                    i * options.dilation().h) + dy[at];
          d[1] = static_cast<float>(pt.x * options.stride().w - options.padding().w +
                                    j * options.dilation().w) + dx[at];
        }
      }
    }
  }
  return out;
}

}  // namespace cvattn::functional

// Per-target block kernels of grid_sample and grid_sample_backward (docs/modules.md §8),
// compiled once for every Highway target by grid_sample.cpp (which validates and dispatches).
// They reproduce PyTorch's x86-64 CPU kernel (aten/src/ATen/native/cpu/GridSamplerKernel.cpp)
// including its float32 coordinate arithmetic and its treatment of NaN, +-inf and huge grid
// values. The reference twin is functional/reference/grid_sample.hpp.
//
// Layout of the work: the output pixels of one image are processed in blocks. For a block the
// taps (offsets, weights, in-bounds bits) are computed once per pixel, then reused for every
// channel. Scratch lives on the stack, nothing is allocated here.
#if defined(CVATTN_FUNCTIONAL_GRID_SAMPLE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_GRID_SAMPLE_INL_H_
#undef CVATTN_FUNCTIONAL_GRID_SAMPLE_INL_H_
#else
#define CVATTN_FUNCTIONAL_GRID_SAMPLE_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/dispatch.hpp"
#include "functional/detail/bilinear_taps.hpp"
#include "functional/detail/grid_sample_job.hpp"
#include "functional/detail/plane_groups.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using functional::Interpolation;
using functional::PaddingMode;
using Geometry = GridSampleJob;

constexpr std::int64_t kBlock = kGridBlock;
constexpr std::int64_t kCubicBlock = kGridCubicBlock;
constexpr std::int64_t kGroup = kPlaneGroup;  // planes per pass of the per-pixel loops
constexpr std::int64_t kLookahead = 64;       // prefetch distance in pixels within a plane

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

// Software prefetch (a hint). The kernels prefetch the planes the next channel (group) will read
// at the offsets of the current one: the hardware prefetcher cannot follow that many short
// strided streams.
inline void prefetch_read(const float* p) { hwy::Prefetch(p); }
// For write (Highway has no such hint). GCC emits PREFETCHW only where the baseline has it
// (-march=native), and T0 otherwise, including in the portable build's AVX-512 bodies: there
// the scatter of nearest's backward took 1.17x the native build's time (perf, Zen 5,
// docs/performance.md). PREFETCHW is written out where the CPU has it: always on AVX-512.
inline void prefetch_write(float* p) {
#if HWY_ARCH_X86 && defined(__GNUC__)
#if HWY_TARGET <= HWY_AVX3
  asm("prefetchw %0" : : "m"(*p));
#else
  if (::cvattn::detail::g_cpu_prefetchw) {
    asm("prefetchw %0" : : "m"(*p));
  } else {
    __builtin_prefetch(p, 1, 3);
  }
#endif
#elif defined(__GNUC__)
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

// The taps of `count` bicubic samples of a block (at most kCubicBlock). The arithmetic runs first
// over arrays, a loop GCC vectorises (a pixel at a time it stayed scalar: 35 % of the per-plane
// kernel at C = 3), then the taps are assembled.
template <PaddingMode P, bool AC>
void cubic_taps_block(const Axis<P, AC>& ax, const Axis<P, AC>& ay, const float* grid,
                      std::int64_t count, CubicTaps* taps) {
  alignas(64) float wx[4][kCubicBlock], wy[4][kCubicBlock];
  alignas(64) float tx[kCubicBlock], ty[kCubicBlock];
  alignas(64) std::int32_t ix[4][kCubicBlock], iy[4][kCubicBlock];
  alignas(64) float xs[kCubicBlock], ys[kCubicBlock];
  // Apart: without a native FMA (SSE4) unnormalize calls fmaf, and the loop below still vectorises.
  for (std::int64_t p = 0; p < count; ++p) {
    xs[p] = ax.unnormalize(grid[2 * p]);
    ys[p] = ay.unnormalize(grid[2 * p + 1]);
  }
  for (std::int64_t p = 0; p < count; ++p) {
    const float x = xs[p];
    const float y = ys[p];
    const float x0 = std::floor(x);
    const float y0 = std::floor(y);
    tx[p] = x - x0;
    ty[p] = y - y0;
    float w[4];
    cubic_weights(tx[p], w);
    for (int i = 0; i < 4; ++i) wx[i][p] = w[i];
    cubic_weights(ty[p], w);
    for (int i = 0; i < 4; ++i) wy[i][p] = w[i];
    for (int i = 0; i < 4; ++i) {
      const float offset = static_cast<float>(i - 1);
      ix[i][p] = to_index(std::trunc(ax.pad(x0 + offset)));
      iy[i][p] = to_index(std::trunc(ay.pad(y0 + offset)));
    }
  }
  for (std::int64_t p = 0; p < count; ++p) {
    CubicTaps& t = taps[p];
    t.tx = tx[p];
    t.ty = ty[p];
    t.col_in = 0;
    t.row_in = 0;
    for (int i = 0; i < 4; ++i) {
      t.wx[i] = wx[i][p];
      t.wy[i] = wy[i][p];
      const std::int32_t xi = ix[i][p], yi = iy[i][p];
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
  // 1 for a sample with all four corners outside (most of a zoomed-out grid), whose value is the
  // same for every plane: far_value, 0 or NaN for a non-finite coordinate (the masked rule's
  // 0 * weight sums).
  std::uint8_t far[kBlock];
  float far_value[kBlock];
};

// The samples of a block with some corners inside and some outside, for the masked rule.
struct EdgeList {
  std::int32_t pixel[kBlock];
  std::int64_t count = 0;
};

#if HWY_TARGET != HWY_SCALAR
// Four floats: the 128-bit vector every SIMD target has (not HWY_SCALAR, which takes the scalar
// loops) (the sample-at-a-time loads below fill one
// vector from two 8-byte corner pairs).
using D4 = hn::FixedTag<float, 4>;
using V4 = hn::Vec<D4>;

// [s[o], s[o+1], s[o+w], s[o+w+1]]: the four corners of an interior sample in two 8-byte loads.
HWY_INLINE V4 load_corners(const float* s, std::int32_t o, std::int64_t w) {
  const hn::FixedTag<float, 2> d2;
  return hn::Combine(D4(), hn::LoadU(d2, s + o + w), hn::LoadU(d2, s + o));
}

// Four interior samples of one plane, summed nw, ne, sw, se like PyTorch (fused multiply-adds
// where the target has them).
HWY_INLINE V4 bilinear4(const float* s, const std::int32_t* o, std::int64_t w, const V4* wt) {
  const D4 d;
  const V4 a0 = load_corners(s, o[0], w);  // [nw0, ne0, sw0, se0]
  const V4 a1 = load_corners(s, o[1], w);
  const V4 a2 = load_corners(s, o[2], w);
  const V4 a3 = load_corners(s, o[3], w);
  // 4x4 transpose: t0 = [nw0, nw1, ne0, ne1], t1 = [nw2, nw3, ne2, ne3], t2/t3 likewise south.
  const V4 t0 = hn::InterleaveLower(d, a0, a1), t1 = hn::InterleaveLower(d, a2, a3);
  const V4 t2 = hn::InterleaveUpper(d, a0, a1), t3 = hn::InterleaveUpper(d, a2, a3);
  const V4 nw = hn::ConcatLowerLower(d, t1, t0), ne = hn::ConcatUpperUpper(d, t1, t0);
  const V4 sw = hn::ConcatLowerLower(d, t3, t2), se = hn::ConcatUpperUpper(d, t3, t2);
  return hn::MulAdd(se, wt[3], hn::MulAdd(sw, wt[2], hn::MulAdd(ne, wt[1], hn::Mul(nw, wt[0]))));
}
#endif  // HWY_TARGET != HWY_SCALAR

inline float bilinear1(const float* s, std::int32_t o, std::int64_t w, float w0, float w1, float w2,
                       float w3) {
  return std::fma(s[o + w + 1], w3, std::fma(s[o + w], w2, std::fma(s[o + 1], w1, s[o] * w0)));
}

// Weights, nw offset and far flag of every sample of a block (bit-identical to
// detail::bilinear_taps); samples with a corner outside the plane get offset 0, and those with
// some corners inside are listed in `edges` (to be given taps by the caller). Returns the number
// of far samples.
inline std::int64_t interior_taps(const float* xs, const float* ys, std::int64_t count,
                                  std::int32_t h, std::int32_t w, BilinearBlock& b,
                                  EdgeList& edges) {
  std::int64_t n = 0, n_far = 0;
  std::int64_t p = 0;
  // A vector of samples per step with an integer bounds test; the edge list comes from the lane
  // mask, so the common all-interior step has no per-sample branch.
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const hn::Rebind<std::uint8_t, decltype(d)> d8;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto one = hn::Set(d, 1.0f), zero = hn::Zero(d);
  const auto vw = hn::Set(di, w), vh = hn::Set(di, h);
  const auto minus1 = hn::Set(di, -1), minus2 = hn::Set(di, -2);
  const auto last_x = hn::Set(di, w - 1), last_y = hn::Set(di, h - 1);
  for (; p + lanes <= count; p += lanes) {
    const auto x = hn::Load(d, xs + p), y = hn::Load(d, ys + p);
    const auto x0 = hn::Floor(x), y0 = hn::Floor(y);
    const auto lx = hn::Sub(x, x0), ly = hn::Sub(y, y0);
    const auto hx = hn::Sub(one, lx), hy = hn::Sub(one, ly);
    const auto w0 = hn::Mul(hy, hx), w1 = hn::Mul(hy, lx);
    const auto w2 = hn::Mul(ly, hx), w3 = hn::Mul(ly, lx);
    hn::Store(w0, d, b.w[0] + p);
    hn::Store(w1, d, b.w[1] + p);
    hn::Store(w2, d, b.w[2] + p);
    hn::Store(w3, d, b.w[3] + p);
    // NaN, +-inf and values past the int32 range convert to INT_MIN or INT_MAX, both outside.
    const auto xi = hn::ConvertTo(di, x0), yi = hn::ConvertTo(di, y0);
    const auto in = hn::And(hn::And(hn::Gt(xi, minus1), hn::Gt(last_x, xi)),
                            hn::And(hn::Gt(yi, minus1), hn::Gt(last_y, yi)));
    // Outside lanes are zeroed before the multiply, so it cannot overflow.
    const auto nw = hn::Add(hn::Mul(hn::IfThenElseZero(in, yi), vw), hn::IfThenElseZero(in, xi));
    hn::Store(nw, di, b.nw + p);
    if (hn::AllTrue(di, in)) {
      hn::StoreU(hn::Zero(d8), d8, b.far + p);
      continue;
    }
    // Some corner inside: the cell's top-left corner lies in [-1, w-1] x [-1, h-1].
    const auto near = hn::And(hn::And(hn::Gt(xi, minus2), hn::Gt(vw, xi)),
                              hn::And(hn::Gt(yi, minus2), hn::Gt(vh, yi)));
    hn::StoreU(hn::DemoteTo(d8, hn::IfThenZeroElse(near, hn::Set(di, 1))), d8, b.far + p);
    n_far += static_cast<std::int64_t>(hn::CountTrue(di, hn::Not(near)));
    // The masked rule with four zero reads, in its order (exact on every target: each product is
    // 0 or NaN).
    hn::Store(hn::MulAdd(zero, w3, hn::MulAdd(zero, w2, hn::MulAdd(zero, w1, hn::Mul(zero, w0)))),
              d, b.far_value + p);
    // The edge lanes are appended from the mask bits without a branch per lane (n <= p, so every
    // write lands inside the block): Highway 1.0.3's CompressStore copies a 1 KiB table onto the
    // stack per call on AVX2 and is microcoded on AMD Zen 4 and later.
    std::uint8_t bits[(hn::MaxLanes(di) + 7) / 8 + 8] = {};
    hn::StoreMaskBits(di, hn::AndNot(in, near), bits);
    for (std::int64_t i = 0; i < lanes; ++i) {
      edges.pixel[n] = static_cast<std::int32_t>(p + i);
      n += (bits[i >> 3] >> (i & 7)) & 1u;
    }
  }
  // The tail goes through the masked rule whatever its corners.
  for (; p < count; ++p) {
    const BilinearTaps t = detail::bilinear_taps(xs[p], ys[p], h, w);
    b.nw[p] = t.inside == kAllInside ? t.offset[0] : 0;
    for (int k = 0; k < 4; ++k) b.w[k][p] = t.weight[k];
    b.far[p] = 0;
    if (t.inside != kAllInside) edges.pixel[n++] = static_cast<std::int32_t>(p);
  }
  edges.count = n;
  return n_far;
}

// Pixel coordinates of the bilinear samples of a block, computed first: the padding transform
// alone vectorises as plain float code.
template <PaddingMode P, bool AC>
void sample_positions(const Axis<P, AC>& ax, const Axis<P, AC>& ay, const float* grid,
                      std::int64_t count, float* xs, float* ys) {
  for (std::int64_t p = 0; p < count; ++p) {
    xs[p] = ax.apply(grid[2 * p]);
    ys[p] = ay.apply(grid[2 * p + 1]);
  }
}

// Pixels [begin, end) of a block (count pixels) for `group` planes from s into d with the
// unmasked interior formula; `ahead` planes after the group are prefetched.
inline void bilinear_run(const float* s, float* d, std::int64_t group, std::int64_t ahead,
                         const BilinearBlock& b, std::int64_t begin, std::int64_t end,
                         std::int64_t count, std::int64_t w, std::int64_t in_plane,
                         std::int64_t out_plane) {
  std::int64_t p = begin;
#if HWY_TARGET != HWY_SCALAR
  for (; p + 4 <= end; p += 4) {
    const std::int32_t* o = b.nw + p;
    const D4 d4;
    const V4 wt[4] = {hn::LoadU(d4, b.w[0] + p), hn::LoadU(d4, b.w[1] + p),
                      hn::LoadU(d4, b.w[2] + p), hn::LoadU(d4, b.w[3] + p)};
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
      hn::StoreU(bilinear4(s + k * in_plane, o, w, wt), d4, d + k * out_plane + p);
    }
  }
#else
  (void)ahead;
  (void)count;
#endif
  for (; p < end; ++p) {
    for (std::int64_t k = 0; k < group; ++k) {
      d[k * out_plane + p] =
          bilinear1(s + k * in_plane, b.nw[p], w, b.w[0][p], b.w[1][p], b.w[2][p], b.w[3][p]);
    }
  }
}

// The runs of equal far flags among `count`: bounds[0] = 0, then the start of every run after the
// first, then count; run i is far for odd i. Returns the number of bounds. Without far samples
// the block is one run.
inline std::int64_t far_runs(const std::uint8_t* far, std::int64_t count, bool any_far,
                             std::int32_t* bounds) {
  std::int64_t n = 0;
  bounds[n++] = 0;
  std::uint8_t current = 0;
  for (std::int64_t p = 0; any_far && p < count;) {
    // Eight flags at a time within a run (the runs are long).
    if (p + 8 <= count) {
      std::uint64_t flags;
      std::memcpy(&flags, far + p, sizeof flags);
      if (flags == (current != 0 ? 0x0101010101010101u : 0u)) {
        p += 8;
        continue;
      }
    }
    if (far[p] != current) {
      bounds[n++] = static_cast<std::int32_t>(p);
      current = far[p];
    }
    ++p;
  }
  bounds[n++] = static_cast<std::int32_t>(count);
  return n;
}

template <PaddingMode P, bool AC>
void bilinear_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                    const float* in, const float* grid, float* out, std::int64_t count) {
  BilinearBlock b;
  EdgeList edges;
  BilinearTaps taps[kBlock];  // of edges.pixel
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  alignas(64) float xs[kBlock];
  alignas(64) float ys[kBlock];
  sample_positions(ax, ay, grid, count, xs, ys);
  const std::int64_t n_far = interior_taps(xs, ys, count, h, w, b, edges);
  for (std::int64_t e = 0; e < edges.count; ++e) {
    const std::int32_t p = edges.pixel[e];
    taps[e] = detail::bilinear_taps(xs[p], ys[p], h, w);
  }
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  // Pass 1, run by run: far samples get their value, the others the unmasked interior formula
  // (edge pixels read the valid dummy offset 0 and are overwritten in pass 2). Only a block with
  // an interior sample reads: that implies h, w >= 2, so the dummy's four reads are in bounds.
  const bool reads = count - edges.count - n_far > 0;
  std::int32_t bounds[kBlock + 2];  // runs [bounds[i], bounds[i+1]), far for odd i
  const std::int64_t n_bounds = far_runs(b.far, count, n_far > 0, bounds);
  for (std::int64_t c0 = 0; c0 < g.c; c0 += kGroup) {
    const std::int64_t group = std::min(kGroup, g.c - c0);
    const std::int64_t ahead = std::min(kGroup, g.c - c0 - group);
    const float* s = in + c0 * in_plane;
    float* d = out + c0 * out_plane;
    for (std::int64_t r = 0; r + 1 < n_bounds; ++r) {
      const std::int64_t begin = bounds[r], end = bounds[r + 1];
      if (r % 2 == 1) {
        for (std::int64_t k = 0; k < group; ++k) {
          std::memcpy(d + k * out_plane + begin, b.far_value + begin,
                      static_cast<std::size_t>(end - begin) * sizeof(float));
        }
      } else if (reads) {
        bilinear_run(s, d, group, ahead, b, begin, end, count, w, in_plane, out_plane);
      }
    }
  }
  // Pass 2: samples with some corners inside and some outside, with the masked rule.
  for (std::int64_t c = 0; c < g.c; ++c) {
    const float* s = in + c * in_plane;
    float* d = out + c * out_plane;
    for (std::int64_t e = 0; e < edges.count; ++e) {
      d[edges.pixel[e]] = detail::bilinear_read(s, taps[e]);
    }
  }
}

// The tap of every nearest sample of a block: off[p] = y*w + x and ok[p] = 1 when inside the
// plane, off[p] = 0 and ok[p] = 0 otherwise.
template <PaddingMode P, bool AC>
void nearest_taps(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                  const float* grid, std::int64_t count, std::int32_t* off, std::int32_t* ok) {
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  for (std::int64_t p = 0; p < count; ++p) {
    // nearbyint: round half to even, as PyTorch's vectorised rounding does (std::round would not).
    const std::int32_t xi = to_index(std::nearbyint(ax.apply(grid[2 * p])));
    const std::int32_t yi = to_index(std::nearbyint(ay.apply(grid[2 * p + 1])));
    // Unsigned range tests, no bool values: the loop vectorises.
    const std::int32_t inside =
        static_cast<std::uint32_t>(xi) < static_cast<std::uint32_t>(w)
            ? (static_cast<std::uint32_t>(yi) < static_cast<std::uint32_t>(h) ? 1 : 0)
            : 0;
    ok[p] = inside;
    off[p] = inside ? yi * w + xi : 0;
  }
}

// Nearest taps of `count` pixels for G channel planes from s into d, G fixed at compile time: a
// loop over a run-time group size put a compare and branch per channel into the pixel loop (25
// instructions per pixel at C = 3), and its speed then moved with the loop's code alignment (12 %
// between two builds of the same source on Emerald Rapids). `ahead` planes after the group are
// prefetched.
template <int G>
HWY_INLINE void nearest_group(const float* s, float* d, std::int64_t in_plane,
                              std::int64_t out_plane, const std::int32_t* off,
                              const std::int32_t* ok, std::int64_t count, std::int64_t ahead) {
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int32_t o = off[p];
    const bool inside = ok[p] != 0;
    if ((p & 3) == 0) {
      for (std::int64_t k = 0; k < ahead; ++k) prefetch_read(s + (G + k) * in_plane + o);
      // The last group has nothing after it: fetch this group's planes a little ahead.
      if (ahead == 0 && p + kLookahead < count) {
        for (int k = 0; k < G; ++k) prefetch_read(s + k * in_plane + off[p + kLookahead]);
      }
    }
    for (int k = 0; k < G; ++k) {
      const float v = s[k * in_plane + o];  // offset 0 when outside: always a valid read
      d[k * out_plane + p] = inside ? v : 0.0f;
    }
  }
}

template <PaddingMode P, bool AC>
void nearest_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay, const float* in,
                   const float* grid, float* out, std::int64_t count) {
  alignas(64) std::int32_t off[kBlock];
  alignas(64) std::int32_t ok[kBlock];
  nearest_taps(g, ax, ay, grid, count, off, ok);
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t c0 = 0; c0 < g.c; c0 += kGroup) {
    const std::int64_t group = std::min(kGroup, g.c - c0);
    const std::int64_t ahead = std::min(kGroup, g.c - c0 - group);  // planes to prefetch
    const float* s = in + c0 * in_plane;
    float* d = out + c0 * out_plane;
    with_plane_group(group, [&](auto g_const) {
      nearest_group<decltype(g_const)::value>(s, d, in_plane, out_plane, off, ok, count, ahead);
    });
  }
}

template <PaddingMode P, bool AC>
void bicubic_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay, const float* in,
                   const float* grid, float* out, std::int64_t count) {
  CubicTaps taps[kCubicBlock];
  cubic_taps_block(ax, ay, grid, count, taps);
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  // Groups of planes per pixel: the taps and the weights are loaded once for the group, and its
  // planes' sums are independent chains.
  for (std::int64_t c0 = 0; c0 < g.c; c0 += kGroup) {
    const std::int64_t group = std::min(kGroup, g.c - c0);
    const float* src = in + c0 * in_plane;
    float* dst = out + c0 * out_plane;
    for (std::int64_t p = 0; p < count; ++p) {
      const CubicTaps& t = taps[p];
#if HWY_TARGET != HWY_SCALAR
      if (t.dense) {
        // Four 16-byte row loads instead of 16 scalar ones; rows are combined with wy first,
        // then with wx (a different summation order than PyTorch's, within rounding).
        const D4 d4;
        const V4 wy0 = hn::Set(d4, t.wy[0]), wy1 = hn::Set(d4, t.wy[1]);
        const V4 wy2 = hn::Set(d4, t.wy[2]), wy3 = hn::Set(d4, t.wy[3]);
        const V4 wx = hn::LoadU(d4, t.wx);
        for (std::int64_t k = 0; k < group; ++k) {
          const float* s = src + k * in_plane + t.col[0];
          V4 acc = hn::Mul(wy0, hn::LoadU(d4, s + t.row[0]));
          acc = hn::MulAdd(wy1, hn::LoadU(d4, s + t.row[1]), acc);
          acc = hn::MulAdd(wy2, hn::LoadU(d4, s + t.row[2]), acc);
          acc = hn::MulAdd(wy3, hn::LoadU(d4, s + t.row[3]), acc);
          const V4 v = hn::Mul(acc, wx);
          const V4 pairs = hn::Add(v, hn::Shuffle1032(v));  // [v0 + v2, v1 + v3, ...]
          dst[k * out_plane + p] = hn::GetLane(pairs) + hn::ExtractLane(pairs, 1);
        }
        continue;
      }
#endif
      for (std::int64_t k = 0; k < group; ++k) {
        dst[k * out_plane + p] = bicubic_read(src + k * in_plane, t);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Backward kernels. Same pointers as forward plus `gout` (block of grad_output, channel 0),
// `gin` (image n's grad_input accumulator [C, H, W]) and `ggrid` (block of grad_grid). Each
// plane's pixels scatter in order; the grid gradient of each pixel is summed over channels in
// order.

// Bilinear's backward for `count` pixels and G planes (G fixed at compile time, as
// nearest_group): scatters go's pixels into gi at the four taps and adds each plane's share of the
// grid gradient to acc, planes in order, so every sum keeps the channel-by-channel order. The taps
// are loaded and tested once for the group, and an interior sample reads a plane's four values
// before it writes to them (see bicubic_backward_block). Prefetching as nearest_scatter_group.
template <int G>
HWY_INLINE void bilinear_scatter_group(const float* src, const float* go, float* gi,
                                       std::int64_t in_plane, std::int64_t out_plane,
                                       const BilinearTaps* taps, float (*acc)[kCubicBlock],
                                       std::int64_t count, std::int64_t ahead, bool first) {
  for (std::int64_t p = 0; p < count; ++p) {
    const BilinearTaps& t = taps[p];
    if ((p & 3) == 0) {
      for (std::int64_t k = G; k < G + ahead; ++k) {
        prefetch_read(src + k * in_plane + t.offset[0]);
        prefetch_read(src + k * in_plane + t.offset[2]);
        prefetch_write(gi + k * in_plane + t.offset[0]);
        prefetch_write(gi + k * in_plane + t.offset[2]);
      }
      if (first && p + kLookahead < count) {
        const BilinearTaps& f = taps[p + kLookahead];
        for (int k = 0; k < G; ++k) {
          prefetch_read(src + k * in_plane + f.offset[0]);
          prefetch_read(src + k * in_plane + f.offset[2]);
          prefetch_write(gi + k * in_plane + f.offset[0]);
          prefetch_write(gi + k * in_plane + f.offset[2]);
        }
      }
    }
    const float north = t.ly, south = 1.0f - t.ly, west = t.lx, east = 1.0f - t.lx;
    float ax = acc[0][p], ay = acc[1][p];
    if (t.inside == kAllInside) {
      for (int k = 0; k < G; ++k) {
        const float* s = src + k * in_plane;
        const float v0 = s[t.offset[0]], v1 = s[t.offset[1]];
        const float v2 = s[t.offset[2]], v3 = s[t.offset[3]];
        const float d = go[k * out_plane + p];
        float* d_plane = gi + k * in_plane;
        for (int j = 0; j < 4; ++j) d_plane[t.offset[j]] += t.weight[j] * d;
        ax += ((v1 - v0) * south + (v3 - v2) * north) * d;
        ay += ((v2 - v0) * east + (v3 - v1) * west) * d;
      }
    } else {
      for (int k = 0; k < G; ++k) {
        const float* s = src + k * in_plane;
        float* d_plane = gi + k * in_plane;
        const float d = go[k * out_plane + p];
        float v[4];
        for (int j = 0; j < 4; ++j) {
          const bool inside = (t.inside >> j) & 1u;
          if (inside) d_plane[t.offset[j]] += t.weight[j] * d;
          v[j] = inside ? s[t.offset[j]] : 0.0f;
        }
        ax += ((v[1] - v[0]) * south + (v[3] - v[2]) * north) * d;
        ay += ((v[2] - v[0]) * east + (v[3] - v[1]) * west) * d;
      }
    }
    acc[0][p] = ax;
    acc[1][p] = ay;
  }
}

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
  for (std::int64_t c0 = 0; c0 < g.c; c0 += kGroup) {
    const std::int64_t group = std::min(kGroup, g.c - c0);
    const std::int64_t ahead = std::min(kGroup, g.c - c0 - group);  // planes to prefetch
    const float* src = in + c0 * in_plane;
    const float* go = gout + c0 * out_plane;
    float* gi = gin + c0 * in_plane;
    const bool first = c0 == 0;
    with_plane_group(group, [&](auto g_const) {
      bilinear_scatter_group<decltype(g_const)::value>(src, go, gi, in_plane, out_plane, taps, acc,
                                                       count, ahead, first);
    });
  }
  for (std::int64_t p = 0; p < count; ++p) {
    ggrid[2 * p] = acc[0][p] * mult[0][p];
    ggrid[2 * p + 1] = acc[1][p] * mult[1][p];
  }
}

// Nearest's scatter of `count` pixels for G planes of go into gi (G fixed at compile time, as
// nearest_group): the tap is loaded and tested once for the group, and each plane still adds its
// pixels in order. The next group's planes are fetched for write at the current offsets; the
// first group, which nothing fetched, runs a little ahead in its own planes.
template <int G>
HWY_INLINE void nearest_scatter_group(const float* go, float* gi, std::int64_t in_plane,
                                      std::int64_t out_plane, const std::int32_t* off,
                                      const std::int32_t* ok, std::int64_t count,
                                      std::int64_t ahead, bool first) {
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int32_t o = off[p];
    if ((p & 3) == 0) {
      for (std::int64_t k = 0; k < ahead; ++k) prefetch_write(gi + (G + k) * in_plane + o);
      if (first && p + kLookahead < count) {
        for (int k = 0; k < G; ++k) prefetch_write(gi + k * in_plane + off[p + kLookahead]);
      }
    }
    if (ok[p] != 0) {
      for (int k = 0; k < G; ++k) gi[k * in_plane + o] += go[k * out_plane + p];
    }
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
    const std::int32_t inside =
        static_cast<std::uint32_t>(xi) < static_cast<std::uint32_t>(w)
            ? (static_cast<std::uint32_t>(yi) < static_cast<std::uint32_t>(h) ? 1 : 0)
            : 0;
    ok[p] = inside;
    off[p] = inside ? yi * w + xi : 0;
    ggrid[2 * p] = 0.0f;  // nearest has no gradient with respect to the grid
    ggrid[2 * p + 1] = 0.0f;
  }
  const std::int64_t in_plane = g.in_plane();
  const std::int64_t out_plane = g.out_plane();
  for (std::int64_t c0 = 0; c0 < g.c; c0 += kGroup) {
    const std::int64_t group = std::min(kGroup, g.c - c0);
    const std::int64_t ahead = std::min(kGroup, g.c - c0 - group);  // planes to prefetch
    const float* go = gout + c0 * out_plane;
    float* gi = gin + c0 * in_plane;
    const bool first = c0 == 0;
    with_plane_group(group, [&](auto g_const) {
      nearest_scatter_group<decltype(g_const)::value>(go, gi, in_plane, out_plane, off, ok, count,
                                                      ahead, first);
    });
  }
}

// One bicubic pixel of one plane in backward, the 16 values v[i][j] (column i, row j; 0 outside)
// already read. Its share of the grid gradient (before the scale), as d * sum_i dx[i] * s[i] and
// d * sum_i wx[i] * u[i] with s[i] = sum_j v[i][j] wy[j] and u[i] = sum_j v[i][j] dy[j]: the same
// sums as PyTorch's tap-by-tap chain, factored so that a plane adds two terms to the chains
// instead of 32 (docs/sampling.md); the reference twin takes this order too.
inline void cubic_grid_terms(const float s[4], const float u[4], const float dx[4],
                             const float wx[4], float d, float* gx, float* gy) {
  const float sx = ((s[0] * dx[0] + s[1] * dx[1]) + s[2] * dx[2]) + s[3] * dx[3];
  const float sy = ((u[0] * wx[0] + u[1] * wx[1]) + u[2] * wx[2]) + u[3] * wx[3];
  *gx = *gx - sx * d;
  *gy = *gy - sy * d;
}

template <PaddingMode P, bool AC>
void bicubic_backward_block(const Geometry& g, const Axis<P, AC>& ax, const Axis<P, AC>& ay,
                            const float* in, const float* grid, const float* gout, float* gin,
                            float* ggrid, std::int64_t count) {
  CubicTaps taps[kCubicBlock];
  float dx[kCubicBlock][4], dy[kCubicBlock][4];
  float acc[2][kCubicBlock];
  cubic_taps_block(ax, ay, grid, count, taps);
  for (std::int64_t p = 0; p < count; ++p) {
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
      alignas(16) float s[4], u[4];
#if HWY_TARGET != HWY_SCALAR
      if (t.dense) {
        // Rows are four contiguous floats: lanes are the columns i. Reads before writes (the
        // gradient planes have the input's layout, often at addresses equal modulo 4 KiB, where a
        // read waits for an earlier write), and Mul + Add, not MulAdd, to keep the twin's
        // rounding.
        const D4 d4;
        const float* r = src + t.col[0];
        const V4 r0 = hn::LoadU(d4, r + t.row[0]), r1 = hn::LoadU(d4, r + t.row[1]);
        const V4 r2 = hn::LoadU(d4, r + t.row[2]), r3 = hn::LoadU(d4, r + t.row[3]);
        V4 sv = hn::Mul(r0, hn::Set(d4, t.wy[0]));
        sv = hn::Add(sv, hn::Mul(r1, hn::Set(d4, t.wy[1])));
        sv = hn::Add(sv, hn::Mul(r2, hn::Set(d4, t.wy[2])));
        sv = hn::Add(sv, hn::Mul(r3, hn::Set(d4, t.wy[3])));
        V4 uv = hn::Mul(r0, hn::Set(d4, dy[p][0]));
        uv = hn::Add(uv, hn::Mul(r1, hn::Set(d4, dy[p][1])));
        uv = hn::Add(uv, hn::Mul(r2, hn::Set(d4, dy[p][2])));
        uv = hn::Add(uv, hn::Mul(r3, hn::Set(d4, dy[p][3])));
        hn::Store(sv, d4, s);
        hn::Store(uv, d4, u);
        cubic_grid_terms(s, u, dx[p], t.wx, d, &acc[0][p], &acc[1][p]);
        const V4 dwx = hn::Mul(hn::Set(d4, d), hn::LoadU(d4, t.wx));  // d * wx[i], then * wy[j]
        float* o = gi + t.col[0];
        for (int j = 0; j < 4; ++j) {
          float* row = o + t.row[j];
          hn::StoreU(hn::Add(hn::LoadU(d4, row), hn::Mul(dwx, hn::Set(d4, t.wy[j]))), d4, row);
        }
        continue;
      }
#endif
      // Any tap outside, or columns clamped together: tap by tap. An outside tap reads 0 and
      // receives nothing, but still multiplies into the sums (NaN weights then give NaN, as in
      // PyTorch).
      float v[4][4];
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          const bool inside = ((t.col_in >> i) & 1u) && ((t.row_in >> j) & 1u);
          v[i][j] = inside ? src[t.row[j] + t.col[i]] : 0.0f;
        }
      }
      for (int i = 0; i < 4; ++i) {
        s[i] = ((v[i][0] * t.wy[0] + v[i][1] * t.wy[1]) + v[i][2] * t.wy[2]) + v[i][3] * t.wy[3];
        u[i] =
            ((v[i][0] * dy[p][0] + v[i][1] * dy[p][1]) + v[i][2] * dy[p][2]) + v[i][3] * dy[p][3];
      }
      cubic_grid_terms(s, u, dx[p], t.wx, d, &acc[0][p], &acc[1][p]);
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          const bool inside = ((t.col_in >> i) & 1u) && ((t.row_in >> j) & 1u);
          if (inside) gi[t.row[j] + t.col[i]] += d * t.wx[i] * t.wy[j];
        }
      }
    }
  }
  for (std::int64_t p = 0; p < count; ++p) {
    ggrid[2 * p] = acc[0][p] * ax.scale();
    ggrid[2 * p + 1] = acc[1][p] * ay.scale();
  }
}

// ---------------------------------------------------------------------------------------------
// Entry points (exported by grid_sample.cpp): one block of `count` output pixels starting at p0
// of image n, with (padding, align_corners) turned into compile-time constants.
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

inline void GridSampleForwardBlock(const GridSampleJob& g, std::int64_t n, std::int64_t p0,
                                   std::int64_t count) {
  const float* in_n = g.input + n * g.c * g.in_plane();
  const float* grid_b = g.grid + (n * g.out_plane() + p0) * 2;
  float* out_b = g.output + n * g.c * g.out_plane() + p0;
  with_axis_type(g.padding, g.align_corners, [&](auto* tag) {
    using AxisT = std::remove_pointer_t<decltype(tag)>;
    const AxisT ax(g.w), ay(g.h);
    switch (g.mode) {
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
}

// Scatters into gin_all (the [n, c, h, w] grad_input accumulator this block may write to).
inline void GridSampleBackwardBlock(const GridSampleJob& g, std::int64_t n, std::int64_t p0,
                                    std::int64_t count, float* gin_all) {
  const std::int64_t image = g.c * g.in_plane();
  const float* in_n = g.input + n * image;
  const float* grid_b = g.grid + (n * g.out_plane() + p0) * 2;
  const float* gout_b = g.grad_output + n * g.c * g.out_plane() + p0;
  float* gin_n = gin_all + n * image;
  float* ggrid_b = g.grad_grid + (n * g.out_plane() + p0) * 2;
  with_axis_type(g.padding, g.align_corners, [&](auto* tag) {
    using AxisT = std::remove_pointer_t<decltype(tag)>;
    const AxisT ax(g.w), ay(g.h);
    switch (g.mode) {
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
  });
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle

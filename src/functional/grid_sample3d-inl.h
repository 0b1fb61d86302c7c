// Per-target kernels of the volumetric grid_sample and its backward (sampling3d.hpp), compiled
// once for every Highway target by grid_sample3d.cpp (which validates and dispatches). They
// reproduce PyTorch's scalar 3-D CPU kernel: grid_sampler_compute_source_index (GridSampler.h)
// per axis, then the eight trilinear corner weights or the nearest voxel, in its float32
// operation order (the including file is built without FMA contraction). The reference twin is
// functional/reference/grid_sample3d.hpp.
//
// Work layout: the output voxels of one volume are processed in blocks. A block's taps (offsets,
// weights, in-bounds bits) are computed once per voxel and reused for every channel. With C >= 8
// the volume is first packed into blocks of L channels (functional/detail/channel_tiles-inl.h),
// so that a tap is one vector load of L channels; otherwise, and for the channels after the last
// block, each channel is a pass over contiguous output.
#if defined(CVATTN_FUNCTIONAL_GRID_SAMPLE3D_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_GRID_SAMPLE3D_INL_H_
#undef CVATTN_FUNCTIONAL_GRID_SAMPLE3D_INL_H_
#else
#define CVATTN_FUNCTIONAL_GRID_SAMPLE3D_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "functional/detail/channel_plan.hpp"
#include "functional/detail/channel_tiles-inl.h"
#include "functional/detail/grid_sample3d_job.hpp"
#include "functional/detail/plane_groups.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using functional::Interpolation;
using functional::PaddingMode;
using Job = GridSample3dJob;

constexpr std::int64_t kBlock3 = kGrid3dBlock;

// static_cast<int>(x) of a float as x86-64 does it (cvttss2si): out-of-range and NaN give
// INT_MIN. PyTorch's reflect_coordinates takes the parity of that.
bool odd_flips(float v) {
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return false;  // INT_MIN: even
  return (static_cast<std::int64_t>(v) % 2) != 0;
}

// One axis: PyTorch's grid_sampler_compute_source_index and its _set_grad twin.
class Axis3 {
 public:
  Axis3(std::int64_t size, PaddingMode padding, bool align_corners)
      : size_(size), padding_(padding), ac_(align_corners) {}

  [[nodiscard]] std::int64_t size() const { return size_; }

  // Both inlined where called: the portable build's GCC left source_with_grad as a call in the
  // backward's voxel loop (15 % of a nearest backward) where the native build inlined it.
  [[nodiscard]] HWY_INLINE float source(float coord) const {
    float c = unnormalize(coord);
    if (padding_ == PaddingMode::border) {
      c = clip(c);
    } else if (padding_ == PaddingMode::reflection) {
      c = ac_ ? reflect(c, 0, 2 * (size_ - 1)) : reflect(c, -1, 2 * size_ - 1);
      c = clip(c);
    }
    return safe_downgrade(c);
  }

  [[nodiscard]] HWY_INLINE float source_with_grad(float coord, float* grad) const {
    float c;
    if (ac_) {
      *grad = static_cast<float>(size_ - 1) / 2;
    } else {
      *grad = static_cast<float>(size_) / 2;
    }
    c = unnormalize(coord);
    if (padding_ == PaddingMode::border) {
      float g_clip;
      c = clip_with_grad(c, &g_clip);
      *grad = *grad * g_clip;
    } else if (padding_ == PaddingMode::reflection) {
      float g_refl, g_clip;
      c = ac_ ? reflect_with_grad(c, 0, 2 * (size_ - 1), &g_refl)
              : reflect_with_grad(c, -1, 2 * size_ - 1, &g_refl);
      c = clip_with_grad(c, &g_clip);
      *grad = *grad * g_refl * g_clip;
    }
    return safe_downgrade(c);
  }

 private:
  [[nodiscard]] float unnormalize(float coord) const {
    if (ac_) return ((coord + 1) / 2) * static_cast<float>(size_ - 1);
    return ((coord + 1) * static_cast<float>(size_) - 1) / 2;
  }

  // std::min(size - 1, std::max(c, 0)): NaN passes max and loses against the limit in min.
  [[nodiscard]] float clip(float c) const {
    const float lo = (c < 0.0f) ? 0.0f : c;
    const auto hi = static_cast<float>(size_ - 1);
    return (lo < hi) ? lo : hi;
  }

  // The limits themselves count as outside for the gradient; NaN passes with gradient 1.
  [[nodiscard]] float clip_with_grad(float c, float* grad) const {
    if (c <= 0.0f) {
      *grad = 0.0f;
      return 0.0f;
    }
    const auto hi = static_cast<float>(size_ - 1);
    if (c >= hi) {
      *grad = 0.0f;
      return hi;
    }
    *grad = 1.0f;
    return c;
  }

  static float reflect(float c, std::int64_t twice_low, std::int64_t twice_high) {
    if (twice_low == twice_high) return 0.0f;
    const float min = static_cast<float>(twice_low) / 2;
    const float span = static_cast<float>(twice_high - twice_low) / 2;
    c = std::fabs(c - min);
    const float extra = std::fmod(c, span);
    return odd_flips(std::floor(c / span)) ? span - extra + min : extra + min;
  }

  static float reflect_with_grad(float c, std::int64_t twice_low, std::int64_t twice_high,
                                 float* grad) {
    if (twice_low == twice_high) {
      *grad = 0.0f;
      return 0.0f;
    }
    const float min = static_cast<float>(twice_low) / 2;
    const float span = static_cast<float>(twice_high - twice_low) / 2;
    c = c - min;
    float mult = 1.0f;
    if (c < 0.0f) {
      mult = -1.0f;
      c = -c;
    }
    const float extra = std::fmod(c, span);
    if (odd_flips(std::floor(c / span))) {
      *grad = -mult;
      return span - extra + min;
    }
    *grad = mult;
    return extra + min;
  }

  // PyTorch's safe_downgrade_to_int_range: non-finite or out-of-int coordinates become -100,
  // which lies outside every volume.
  static float safe_downgrade(float x) {
    constexpr auto kMax = static_cast<float>(std::numeric_limits<int>::max() - 1);
    constexpr auto kMin = static_cast<float>(std::numeric_limits<int>::min());
    if (x > kMax || x < kMin || !std::isfinite(static_cast<double>(x))) return -100.0f;
    return x;
  }

  std::int64_t size_;
  PaddingMode padding_;
  bool ac_;
};

// The eight trilinear corners of one voxel, in PyTorch's order tnw, tne, tsw, tse, bnw, bne,
// bsw, bse: corner k = 4*dz + 2*dy + dx.
struct Taps3 {
  std::int64_t offset[8];  // into one channel volume (0 where outside)
  float weight[8];
  float wx[2], wy[2], wz[2];  // per-axis factors: [0] = (x1 - x), [1] = (x - x0)
  std::uint32_t inside;       // bit k: corner k inside
};

Taps3 trilinear_taps(float ix, float iy, float iz, const Job& g) {
  Taps3 t{};
  const auto x0 = static_cast<std::int64_t>(std::floor(ix));
  const auto y0 = static_cast<std::int64_t>(std::floor(iy));
  const auto z0 = static_cast<std::int64_t>(std::floor(iz));
  t.wx[0] = static_cast<float>(x0 + 1) - ix;
  t.wx[1] = ix - static_cast<float>(x0);
  t.wy[0] = static_cast<float>(y0 + 1) - iy;
  t.wy[1] = iy - static_cast<float>(y0);
  t.wz[0] = static_cast<float>(z0 + 1) - iz;
  t.wz[1] = iz - static_cast<float>(z0);
  t.inside = 0;
  for (int k = 0; k < 8; ++k) {
    const int dx = k & 1, dy = (k >> 1) & 1, dz = (k >> 2) & 1;
    const std::int64_t x = x0 + dx, y = y0 + dy, z = z0 + dz;
    t.weight[k] = t.wx[dx] * t.wy[dy] * t.wz[dz];
    const bool ok = x >= 0 && x < g.w && y >= 0 && y < g.h && z >= 0 && z < g.d;
    t.offset[k] = ok ? (z * g.h + y) * g.w + x : 0;
    t.inside |= static_cast<std::uint32_t>(ok) << k;
  }
  return t;
}

// std::round(v) (half away from zero) as an index, or -1 when |v| >= 1e9 or NaN (outside any
// volume). Without SSE4.1's roundps, std::round is a library call on the portable baseline; the
// truncation and the exact fraction v - trunc(v) are not (native builds inlined it: 1.4-1.55x).
std::int32_t round_half_away(float v) {
  if (!(std::fabs(v) < 1e9f)) return -1;
  const auto i = static_cast<std::int32_t>(v);   // toward zero
  const float frac = v - static_cast<float>(i);  // exact: |v| < 2^24, or v is an integer
  return i + static_cast<std::int32_t>(frac >= 0.5f) - static_cast<std::int32_t>(frac <= -0.5f);
}

// The nearest voxel's offset, or -1 when outside. PyTorch 1.13's 3-D CPU kernel rounds half away
// from zero (std::round; its 2-D kernel rounds half to even): pixel coordinate -0.5 is outside.
HWY_INLINE std::int64_t nearest_offset(float ix, float iy, float iz, const Job& g) {
  const std::int64_t x = round_half_away(ix);
  const std::int64_t y = round_half_away(iy);
  const std::int64_t z = round_half_away(iz);
  const bool ok = x >= 0 && x < g.w && y >= 0 && y < g.h && z >= 0 && z < g.d;
  return ok ? (z * g.h + y) * g.w + x : -1;
}

// One block of `count` output voxels starting at p0 of volume n, channel by channel.
void GridSample3dForwardBlock(const Job& g, std::int64_t n, std::int64_t p0, std::int64_t count) {
  const Axis3 ax(g.w, g.padding, g.align_corners);
  const Axis3 ay(g.h, g.padding, g.align_corners);
  const Axis3 az(g.d, g.padding, g.align_corners);
  const std::int64_t vol_in = g.in_volume(), vol_out = g.out_volume();
  const float* in_n = g.input + n * g.c * vol_in;
  const float* grid = g.grid + (n * vol_out + p0) * 3;
  float* out_b = g.output + n * g.c * vol_out + p0;
  if (g.mode == Interpolation::nearest) {
    std::int64_t off[kBlock3];
    for (std::int64_t p = 0; p < count; ++p) {
      const float* q = grid + 3 * p;
      off[p] = nearest_offset(ax.source(q[0]), ay.source(q[1]), az.source(q[2]), g);
    }
    for (std::int64_t c = 0; c < g.c; ++c) {
      const float* src = in_n + c * vol_in;
      float* dst = out_b + c * vol_out;
      for (std::int64_t p = 0; p < count; ++p) dst[p] = off[p] >= 0 ? src[off[p]] : 0.0f;
    }
    return;
  }
  Taps3 taps[kBlock3];
  for (std::int64_t p = 0; p < count; ++p) {
    const float* q = grid + 3 * p;
    taps[p] = trilinear_taps(ax.source(q[0]), ay.source(q[1]), az.source(q[2]), g);
  }
  for (std::int64_t c = 0; c < g.c; ++c) {
    const float* src = in_n + c * vol_in;
    float* dst = out_b + c * vol_out;
    for (std::int64_t p = 0; p < count; ++p) {
      const Taps3& t = taps[p];
      float acc = 0.0f;
      for (int k = 0; k < 8; ++k) {
        if ((t.inside >> k) & 1u) acc += src[t.offset[k]] * t.weight[k];
      }
      dst[p] = acc;
    }
  }
}

#if defined(CVATTN_HAVE_CHANNEL_TILES)

// Wide blocks (kWideChannelLanes) for trilinear, whose 8 taps a voxel are 8 loads per block;
// nearest keeps blocks of kChannelLanes (docs/performance.md, "Channel groups").
inline ChannelGroups ChannelGroupsOf(const Job& g) {
  return PlanChannelGroups(g.c, g.in_volume(), g.mode != Interpolation::nearest);
}

// The packed blocks of g (grid_sample3d.cpp sizes the workspace and the packing tasks with it).
inline ChannelPlan GridSample3dChannelPlan(const Job& g) {
  const ChannelGroups cg = ChannelGroupsOf(g);
  return {cg.count(), cg.channels(), cg.floats()};
}

// Channel block b of volume n into its place in packed ([d*h*w + 1][L] each, the last voxel
// zero).
inline void GridSample3dPackChannels(const Job& g, std::int64_t n, std::int64_t b, float* packed) {
  PackChannelBlock(ChannelGroupsOf(g), b, g.input + n * g.c * g.in_volume(), packed);
}

// The pixel coordinate of one axis (Axis3::source) for a vector of grid values, zeros or border
// padding. (c + 1) / 2 and (...) / 2 are computed as products by 0.5: the same exact quotient,
// rounded once.
template <class D>
hn::VFromD<D> source_vec(D d, hn::VFromD<D> v, std::int64_t size, bool border, bool ac) {
  const auto one = hn::Set(d, 1.0f), half = hn::Set(d, 0.5f);
  auto c =
      ac ? hn::Mul(hn::Mul(hn::Add(v, one), half), hn::Set(d, static_cast<float>(size - 1)))
         : hn::Mul(hn::Sub(hn::Mul(hn::Add(v, one), hn::Set(d, static_cast<float>(size))), one),
                   half);
  if (border) {  // NaN passes the first select and loses against the limit in the second
    const auto hi = hn::Set(d, static_cast<float>(size - 1));
    const auto lo = hn::IfThenElse(hn::Lt(c, hn::Zero(d)), hn::Zero(d), c);
    c = hn::IfThenElse(hn::Lt(lo, hi), lo, hi);
  }
  // safe_downgrade: NaN, +-inf and values beyond int32 become -100.
  const auto ok =
      hn::And(hn::Le(c, hn::Set(d, static_cast<float>(std::numeric_limits<int>::max() - 1))),
              hn::Ge(c, hn::Set(d, static_cast<float>(std::numeric_limits<int>::min()))));
  return hn::IfThenElse(ok, c, hn::Set(d, -100.0f));
}

// Pixel coordinates of a block's voxels: zeros and border padding in vectors, reflection (whose
// std::fmod has no vector form here) and the tail voxel by voxel.
inline void source_coords(const Job& g, const Axis3& ax, const Axis3& ay, const Axis3& az,
                          const float* grid, std::int64_t count, float* xs, float* ys, float* zs) {
  std::int64_t p = 0;
  if (g.padding != PaddingMode::reflection) {
    const hn::ScalableTag<float> d;
    const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
    const bool border = g.padding == PaddingMode::border, ac = g.align_corners;
    for (; p + lanes <= count; p += lanes) {
      hn::VFromD<decltype(d)> gx, gy, gz;
      hn::LoadInterleaved3(d, grid + 3 * p, gx, gy, gz);
      hn::Store(source_vec(d, gx, g.w, border, ac), d, xs + p);
      hn::Store(source_vec(d, gy, g.h, border, ac), d, ys + p);
      hn::Store(source_vec(d, gz, g.d, border, ac), d, zs + p);
    }
  }
  for (; p < count; ++p) {
    const float* q = grid + 3 * p;
    xs[p] = ax.source(q[0]);
    ys[p] = ay.source(q[1]);
    zs[p] = az.source(q[2]);
  }
}

// A block's nearest voxels as offsets into a packed block, `zero` (the zero voxel) outside.
inline void nearest_lanes(const Job& g, const float* xs, const float* ys, const float* zs,
                          std::int64_t count, std::int32_t zero, std::int32_t* off) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  // round_half_away, lane by lane: -1 where |v| >= 1e9 or NaN.
  const auto round = [&](hn::VFromD<decltype(d)> v) HWY_ATTR {
    const auto ok = hn::Lt(hn::Abs(v), hn::Set(d, 1e9f));
    const auto t = hn::IfThenElseZero(ok, v);
    const auto i = hn::ConvertTo(di, t);  // toward zero
    const auto frac = hn::Sub(t, hn::ConvertTo(d, i));
    const auto up = hn::RebindMask(di, hn::Ge(frac, hn::Set(d, 0.5f)));
    const auto down = hn::RebindMask(di, hn::Le(frac, hn::Set(d, -0.5f)));
    const auto r = hn::Sub(hn::Add(i, hn::IfThenElseZero(up, hn::Set(di, 1))),
                           hn::IfThenElseZero(down, hn::Set(di, 1)));
    return hn::IfThenElse(hn::RebindMask(di, ok), r, hn::Set(di, -1));
  };
  const auto in = [&](hn::VFromD<decltype(di)> v, std::int64_t size) HWY_ATTR {
    return hn::And(hn::Gt(v, hn::Set(di, -1)),
                   hn::Lt(v, hn::Set(di, static_cast<std::int32_t>(size))));
  };
  const auto h = hn::Set(di, static_cast<std::int32_t>(g.h));
  const auto w = hn::Set(di, static_cast<std::int32_t>(g.w));
  std::int64_t p = 0;
  for (; p + lanes <= count; p += lanes) {
    const auto x = round(hn::Load(d, xs + p)), y = round(hn::Load(d, ys + p));
    const auto z = round(hn::Load(d, zs + p));
    const auto inside = hn::And(hn::And(in(x, g.w), in(y, g.h)), in(z, g.d));
    const auto o = hn::Add(hn::Mul(hn::Add(hn::Mul(z, h), y), w), x);
    hn::Store(hn::IfThenElse(inside, o, hn::Set(di, zero)), di, off + p);
  }
  for (; p < count; ++p) {
    const std::int64_t o = nearest_offset(xs[p], ys[p], zs[p], g);
    off[p] = o >= 0 ? static_cast<std::int32_t>(o) : zero;
  }
}

// A block's eight trilinear corners (trilinear_taps) as offsets into a packed block, `zero`
// outside, and weights, corner k of voxel p at [k][p].
inline void trilinear_lanes(const Job& g, const float* xs, const float* ys, const float* zs,
                            std::int64_t count, std::int32_t zero, std::int32_t (*off)[kBlock3],
                            float (*weight)[kBlock3]) {
  const hn::ScalableTag<float> d;
  const hn::RebindToSigned<decltype(d)> di;
  using VF = hn::VFromD<decltype(d)>;
  using VI = hn::VFromD<decltype(di)>;
  using MI = hn::Mask<decltype(di)>;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  // One axis: corner 0 at floor(c), its weights (x1 - c, c - x0) and in-bounds masks. A
  // coordinate beyond [-1, size] puts both corners outside, so it is first clamped to
  // [-2, size + 1] (which changes no inside corner) to keep the integers small.
  struct Corner {
    VI i0;
    VF w[2];
    MI in[2];
  };
  // Built by aggregate initialisation: a default-constructed local struct of vectors does not
  // compile for NEON (its implicit constructor lacks the target attribute).
  const auto axis = [&](VF c, std::int64_t size) HWY_ATTR {
    const auto s = static_cast<float>(size);
    c = hn::Min(hn::Max(c, hn::Set(d, -2.0f)), hn::Set(d, s + 1.0f));
    const VF f = hn::Floor(c);
    const VI i0 = hn::ConvertTo(di, f);
    const auto n = static_cast<std::int32_t>(size);
    return Corner{i0,
                  {hn::Sub(hn::Add(f, hn::Set(d, 1.0f)), c), hn::Sub(c, f)},
                  {hn::And(hn::Gt(i0, hn::Set(di, -1)), hn::Lt(i0, hn::Set(di, n))),
                   hn::And(hn::Gt(i0, hn::Set(di, -2)), hn::Lt(i0, hn::Set(di, n - 1)))}};
  };
  const auto h = hn::Set(di, static_cast<std::int32_t>(g.h));
  const auto w = hn::Set(di, static_cast<std::int32_t>(g.w));
  std::int64_t p = 0;
  for (; p + lanes <= count; p += lanes) {
    const Corner cx = axis(hn::Load(d, xs + p), g.w);
    const Corner cy = axis(hn::Load(d, ys + p), g.h);
    const Corner cz = axis(hn::Load(d, zs + p), g.d);
    const VI base = hn::Add(hn::Mul(hn::Add(hn::Mul(cz.i0, h), cy.i0), w), cx.i0);
    for (int k = 0; k < 8; ++k) {
      const int dx = k & 1, dy = (k >> 1) & 1, dz = (k >> 2) & 1;
      // The clamp above changes the weights only where every corner is outside: nothing reads
      // those.
      hn::Store(hn::Mul(hn::Mul(cx.w[dx], cy.w[dy]), cz.w[dz]), d, weight[k] + p);
      const VI o =
          hn::Add(base, hn::Set(di, static_cast<std::int32_t>((dz * g.h + dy) * g.w + dx)));
      const MI inside = hn::And(hn::And(cx.in[dx], cy.in[dy]), cz.in[dz]);
      hn::Store(hn::IfThenElse(inside, o, hn::Set(di, zero)), di, off[k] + p);
    }
  }
  for (; p < count; ++p) {
    const Taps3 t = trilinear_taps(xs[p], ys[p], zs[p], g);
    for (int k = 0; k < 8; ++k) {
      off[k][p] = ((t.inside >> k) & 1u) ? static_cast<std::int32_t>(t.offset[k]) : zero;
      weight[k][p] = t.weight[k];
    }
  }
}

// GridSample3dForwardBlock for the full channel blocks, read from `packed`
// (GridSample3dPackChannels), then the remaining channels one by one. An outside tap reads the
// zero voxel: it adds +0 to a sum that starts at +0 (so is never -0), which changes nothing,
// exactly as skipping it does; the weights are finite. So the results are bit-identical to the
// channel-by-channel loop.
inline void GridSample3dChannelBlock(const Job& g, const float* packed, std::int64_t n,
                                     std::int64_t p0, std::int64_t count) {
  const Axis3 ax(g.w, g.padding, g.align_corners);
  const Axis3 ay(g.h, g.padding, g.align_corners);
  const Axis3 az(g.d, g.padding, g.align_corners);
  const std::int64_t vol_out = g.out_volume();
  const float* grid = g.grid + (n * vol_out + p0) * 3;
  float* out_b = g.output + n * g.c * vol_out + p0;
  const auto zero = static_cast<std::int32_t>(g.in_volume());  // the zero voxel
  const ChannelGroups cg = ChannelGroupsOf(g);
  alignas(64) float xs[kBlock3];
  alignas(64) float ys[kBlock3];
  alignas(64) float zs[kBlock3];
  source_coords(g, ax, ay, az, grid, count, xs, ys, zs);
  // The channels after the last full group read the same taps from the unpacked input, channel
  // by channel, skipping the outside ones (offset `zero`) as GridSample3dForwardBlock does.
  const float* in_n = g.input + n * g.c * g.in_volume();
  const std::int64_t first = cg.channels();
  if (g.mode == Interpolation::nearest) {
    alignas(64) std::int32_t off[kBlock3];
    nearest_lanes(g, xs, ys, zs, count, zero, off);
    ChannelTiles(cg, packed, out_b, vol_out, count,
                 [&](auto d, const float* s, std::int64_t p)
                     HWY_ATTR { return LoadPackedPixel(d, s, off[p]); });
    for (std::int64_t c = first; c < g.c; ++c) {
      const float* src = in_n + c * g.in_volume();
      float* dst = out_b + c * vol_out;
      for (std::int64_t p = 0; p < count; ++p) dst[p] = off[p] != zero ? src[off[p]] : 0.0f;
    }
    return;
  }
  alignas(64) std::int32_t off[8][kBlock3];
  alignas(64) float weight[8][kBlock3];
  trilinear_lanes(g, xs, ys, zs, count, zero, off, weight);
  ChannelTiles(
      cg, packed, out_b, vol_out, count, [&](auto d, const float* s, std::int64_t p) HWY_ATTR {
        auto acc = hn::Zero(d);
        for (int k = 0; k < 8; ++k) {
          acc = hn::Add(acc, hn::Mul(LoadPackedPixel(d, s, off[k][p]), hn::Set(d, weight[k][p])));
        }
        return acc;
      });
  for (std::int64_t c = first; c < g.c; ++c) {
    const float* src = in_n + c * g.in_volume();
    float* dst = out_b + c * vol_out;
    for (std::int64_t p = 0; p < count; ++p) {
      float acc = 0.0f;
      for (int k = 0; k < 8; ++k) {
        if (off[k][p] != zero) acc += src[off[k][p]] * weight[k][p];
      }
      dst[p] = acc;
    }
  }
}

#else  // one lane, or sizeless vectors: channel by channel only

inline ChannelPlan GridSample3dChannelPlan(const Job&) { return {}; }
inline void GridSample3dPackChannels(const Job&, std::int64_t, std::int64_t, float*) {}
inline void GridSample3dChannelBlock(const Job&, const float*, std::int64_t, std::int64_t,
                                     std::int64_t) {}

#endif

// Nearest's scatter of `count` voxels for G planes (plane_groups.hpp): the offset is loaded and
// tested once per voxel, and each plane still adds its voxels in order.
template <int G>
HWY_INLINE void nearest_scatter3(const float* go, float* gi, std::int64_t vol_in,
                                 std::int64_t vol_out, const std::int64_t* off,
                                 std::int64_t count) {
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int64_t o = off[p];
    if (o < 0) continue;
    for (int k = 0; k < G; ++k) gi[k * vol_in + o] += go[k * vol_out + p];
  }
}

// grad_input and grad_grid (both zeroed by the caller; nearest leaves grad_grid so) of volume n:
// its scatter is this call's alone, in PyTorch's voxel order within each channel.
void GridSample3dBackwardVolume(const Job& g, std::int64_t n) {
  const Axis3 ax(g.w, g.padding, g.align_corners);
  const Axis3 ay(g.h, g.padding, g.align_corners);
  const Axis3 az(g.d, g.padding, g.align_corners);
  const bool nearest = g.mode == Interpolation::nearest;
  const std::int64_t vol_in = g.in_volume(), vol_out = g.out_volume();
  const std::int64_t blocks = (vol_out + kBlock3 - 1) / kBlock3;
  const float* in_n = g.input + n * g.c * vol_in;
  float* gin_n = g.grad_input + n * g.c * vol_in;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t p0 = b * kBlock3;
    const std::int64_t count = std::min(kBlock3, vol_out - p0);
    const float* grid_b = g.grid + (n * vol_out + p0) * 3;
    const float* gout_b = g.grad_output + n * g.c * vol_out + p0;
    float* ggrid_b = g.grad_grid + (n * vol_out + p0) * 3;
    if (nearest) {
      // The backward computes coordinates with the _set_grad rules, also for nearest (they
      // differ from forward's for NaN under border/reflection padding).
      std::int64_t off[kBlock3];
      for (std::int64_t p = 0; p < count; ++p) {
        const float* q = grid_b + 3 * p;
        float unused;
        off[p] =
            nearest_offset(ax.source_with_grad(q[0], &unused), ay.source_with_grad(q[1], &unused),
                           az.source_with_grad(q[2], &unused), g);
      }
      for (std::int64_t c0 = 0; c0 < g.c; c0 += kPlaneGroup) {
        const float* go = gout_b + c0 * vol_out;
        float* gi = gin_n + c0 * vol_in;
        with_plane_group(std::min(kPlaneGroup, g.c - c0), [&](auto group) {
          nearest_scatter3<decltype(group)::value>(go, gi, vol_in, vol_out, off, count);
        });
      }
      continue;  // grad_grid stays zero
    }
    Taps3 taps[kBlock3];
    float mult[kBlock3][3];
    float acc[kBlock3][3];
    for (std::int64_t p = 0; p < count; ++p) {
      const float* q = grid_b + 3 * p;
      const float ix = ax.source_with_grad(q[0], &mult[p][0]);
      const float iy = ay.source_with_grad(q[1], &mult[p][1]);
      const float iz = az.source_with_grad(q[2], &mult[p][2]);
      taps[p] = trilinear_taps(ix, iy, iz, g);
      acc[p][0] = acc[p][1] = acc[p][2] = 0.0f;
    }
    for (std::int64_t c = 0; c < g.c; ++c) {
      const float* src = in_n + c * vol_in;
      const float* go = gout_b + c * vol_out;
      float* gi = gin_n + c * vol_in;
      for (std::int64_t p = 0; p < count; ++p) {
        const Taps3& t = taps[p];
        const float d = go[p];
        for (int k = 0; k < 8; ++k) {
          if ((t.inside >> k) & 1u) gi[t.offset[k]] += t.weight[k] * d;
        }
        float gx = acc[p][0], gy = acc[p][1], gz = acc[p][2];
        for (int k = 0; k < 8; ++k) {
          if (!((t.inside >> k) & 1u)) continue;
          const int dx = k & 1, dy = (k >> 1) & 1, dz = (k >> 2) & 1;
          const float v = src[t.offset[k]];
          const float tx = v * t.wy[dy] * t.wz[dz] * d;
          const float ty = v * t.wx[dx] * t.wz[dz] * d;
          const float tz = v * t.wx[dx] * t.wy[dy] * d;
          gx = dx ? gx + tx : gx - tx;
          gy = dy ? gy + ty : gy - ty;
          gz = dz ? gz + tz : gz - tz;
        }
        acc[p][0] = gx;
        acc[p][1] = gy;
        acc[p][2] = gz;
      }
    }
    for (std::int64_t p = 0; p < count; ++p) {
      for (int k = 0; k < 3; ++k) ggrid_b[3 * p + k] = mult[p][k] * acc[p][k];
    }
  }
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard

// Channel-group forward kernels of grid_sample (issue 17), compiled once for every Highway target
// by grid_sample.cpp after the per-channel kernels of grid_sample-inl.h.
//
// For C >= 8 the image is first packed into blocks of L channels with a zero pixel after each
// (functional/detail/channel_tiles-inl.h: L = 8, or 4 on 128-bit targets; bicubic on AVX-512
// takes blocks of 16 as far as they go, then of 8). Then every output pixel
// computes its taps once and, per channel block, reads each tap with one vector load of L
// channels; an outside tap reads the zero pixel, so it contributes 0 * weight exactly like
// detail::bilinear_read (NaN for a NaN weight). The sums are PyTorch's (and the reference
// twin's) fused multiply-add chains lane by lane, so the results are bit-identical to
// reference::grid_sample. L pixels x L channels accumulate in registers and are transposed into
// L contiguous pixels of each of the L output planes. The C % L remaining channels take the
// per-channel kernels.
//
// Only targets with a native fused multiply-add have these kernels (Highway's MulAdd is a
// separate multiply and add elsewhere, which would not be bit-identical); the others report 0
// lanes and grid_sample.cpp keeps the per-channel kernels for them.
#if defined(CVATTN_FUNCTIONAL_GRID_SAMPLE_CHANNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_GRID_SAMPLE_CHANNELS_INL_H_
#undef CVATTN_FUNCTIONAL_GRID_SAMPLE_CHANNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_GRID_SAMPLE_CHANNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "functional/detail/channel_plan.hpp"
#include "functional/detail/channel_tiles-inl.h"
#include "functional/detail/grid_sample_job.hpp"
#include "functional/grid_sample-inl.h"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_NATIVE_FMA && defined(CVATTN_HAVE_CHANNEL_TILES)

constexpr std::int64_t kPrefetchPixels = 32;  // prefetch distance in output pixels

// Wide blocks (kWideChannelLanes) for bicubic: its 16 taps a pixel are 16 loads per block, so
// blocks of 16 channels halve them (docs/performance.md, "Channel groups"). Bilinear and nearest
// keep blocks of kChannelLanes.
inline ChannelGroups ChannelGroupsOf(const GridSampleJob& g) {
  return PlanChannelGroups(g.c, g.in_plane(), g.mode == Interpolation::bicubic);
}

// The packed blocks of g (grid_sample.cpp sizes the workspace and the packing tasks with it).
inline ChannelPlan GridSampleChannelPlan(const GridSampleJob& g) {
  const ChannelGroups cg = ChannelGroupsOf(g);
  return {cg.count(), cg.channels(), cg.floats()};
}

// Channel block b of image n into its place in packed.
inline void GridSamplePackChannels(const GridSampleJob& g, std::int64_t n, std::int64_t b,
                                   float* packed) {
  PackChannelBlock(ChannelGroupsOf(g), b, g.input + n * g.c * g.in_plane(), packed);
}

template <PaddingMode P, bool AC>
void bilinear_channel_block(const Geometry& g, const ChannelGroups& cg, const Axis<P, AC>& ax,
                            const Axis<P, AC>& ay, const float* packed, const float* grid,
                            float* out, std::int64_t count) {
  BilinearBlock b;
  alignas(64) float xs[kBlock];
  alignas(64) float ys[kBlock];
  EdgeList edges;
  alignas(64) std::int32_t off[4][kBlock];
  const auto h = static_cast<std::int32_t>(g.h);
  const auto w = static_cast<std::int32_t>(g.w);
  const auto zero = static_cast<std::int32_t>(g.in_plane());  // the zero pixel
  sample_positions(ax, ay, grid, count, xs, ys);
  interior_taps(xs, ys, count, h, w, b, edges);
  for (std::int64_t p = 0; p < count; ++p) {
    // Every corner outside (far): four reads of the zero pixel give the masked rule's
    // 0 * weight sums.
    const bool far = b.far[p] != 0;
    const std::int32_t o = b.nw[p];
    off[0][p] = far ? zero : o;
    off[1][p] = far ? zero : o + 1;
    off[2][p] = far ? zero : o + w;
    off[3][p] = far ? zero : o + w + 1;
  }
  for (std::int64_t e = 0; e < edges.count; ++e) {
    const std::int32_t p = edges.pixel[e];
    const BilinearTaps t = detail::bilinear_taps(xs[p], ys[p], h, w);
    for (int k = 0; k < 4; ++k) off[k][p] = ((t.inside >> k) & 1u) ? t.offset[k] : zero;
  }
  ChannelTiles(cg, packed, out, g.out_plane(), count, [&](auto d, const float* s, std::int64_t p) {
    const auto L = static_cast<std::int64_t>(hn::MaxLanes(d));
    // The north and south rows of a pixel further on: the hardware prefetcher does not follow
    // the rows of a rotated or scaled grid.
    const std::int64_t ahead = std::min(p + kPrefetchPixels, count - 1);
    prefetch_read(s + static_cast<std::int64_t>(off[0][ahead]) * L);
    prefetch_read(s + static_cast<std::int64_t>(off[2][ahead]) * L);
    // sum nw, ne, sw, se as detail::bilinear_read does
    const auto v0 = LoadPackedPixel(d, s, off[0][p]), v1 = LoadPackedPixel(d, s, off[1][p]);
    const auto v2 = LoadPackedPixel(d, s, off[2][p]), v3 = LoadPackedPixel(d, s, off[3][p]);
    return hn::MulAdd(
        v3, hn::Set(d, b.w[3][p]),
        hn::MulAdd(v2, hn::Set(d, b.w[2][p]),
                   hn::MulAdd(v1, hn::Set(d, b.w[1][p]), hn::Mul(v0, hn::Set(d, b.w[0][p])))));
  });
}

template <PaddingMode P, bool AC>
void nearest_channel_block(const Geometry& g, const ChannelGroups& cg, const Axis<P, AC>& ax,
                           const Axis<P, AC>& ay, const float* packed, const float* grid,
                           float* out, std::int64_t count) {
  alignas(64) std::int32_t off[kBlock];
  alignas(64) std::int32_t ok[kBlock];
  nearest_taps(g, ax, ay, grid, count, off, ok);
  const auto zero = static_cast<std::int32_t>(g.in_plane());
  for (std::int64_t p = 0; p < count; ++p) off[p] = ok[p] != 0 ? off[p] : zero;
  ChannelTiles(cg, packed, out, g.out_plane(), count, [&](auto d, const float* s, std::int64_t p) {
    prefetch_read(s + static_cast<std::int64_t>(off[std::min(p + kPrefetchPixels, count - 1)]) *
                          static_cast<std::int64_t>(hn::MaxLanes(d)));
    return LoadPackedPixel(d, s, off[p]);
  });
}

template <PaddingMode P, bool AC>
void bicubic_channel_block(const Geometry& g, const ChannelGroups& cg, const Axis<P, AC>& ax,
                           const Axis<P, AC>& ay, const float* packed, const float* grid,
                           float* out, std::int64_t count) {
  // Per pixel: the 16 taps (row j, column i at [4j + i]) and the weights wx[0..4), wy[0..4).
  alignas(64) std::int32_t off[kCubicBlock][16];
  alignas(64) float wts[kCubicBlock][8];
  const auto zero = static_cast<std::int32_t>(g.in_plane());
  CubicTaps taps[kCubicBlock];
  cubic_taps_block(ax, ay, grid, count, taps);
  for (std::int64_t p = 0; p < count; ++p) {
    const CubicTaps& t = taps[p];
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 4; ++i) {
        off[p][4 * j + i] = (((t.row_in >> j) & (t.col_in >> i)) & 1u) ? t.row[j] + t.col[i] : zero;
      }
      wts[p][j] = t.wx[j];
      wts[p][4 + j] = t.wy[j];
    }
  }
  ChannelTiles(cg, packed, out, g.out_plane(), count, [&](auto d, const float* s, std::int64_t p) {
    const auto L = static_cast<std::int64_t>(hn::MaxLanes(d));
    // Rows of four taps weighted by wx, then the rows by wy: bicubic_read's (PyTorch's) order.
    const std::int32_t* o = off[p];
    const float* wt = wts[p];
    const std::int32_t* next = off[std::min(p + kPrefetchPixels, count - 1)];
    for (int j = 0; j < 4; ++j) {
      prefetch_read(s + static_cast<std::int64_t>(next[4 * j]) * L);
      prefetch_read(s + static_cast<std::int64_t>(next[4 * j + 3]) * L);
    }
    hn::VFromD<decltype(d)> rows[4];
    for (int j = 0; j < 4; ++j) {
      const std::int32_t* r = o + 4 * j;
      rows[j] = hn::MulAdd(
          hn::Set(d, wt[3]), LoadPackedPixel(d, s, r[3]),
          hn::MulAdd(hn::Set(d, wt[2]), LoadPackedPixel(d, s, r[2]),
                     hn::MulAdd(hn::Set(d, wt[1]), LoadPackedPixel(d, s, r[1]),
                                hn::Mul(hn::Set(d, wt[0]), LoadPackedPixel(d, s, r[0])))));
    }
    return hn::MulAdd(
        hn::Set(d, wt[7]), rows[3],
        hn::MulAdd(hn::Set(d, wt[6]), rows[2],
                   hn::MulAdd(hn::Set(d, wt[5]), rows[1], hn::Mul(hn::Set(d, wt[4]), rows[0]))));
  });
}

// One block of `count` output pixels starting at p0 of image n, whose packed channel blocks are
// at `packed` (GridSamplePackChannels).
inline void GridSampleChannelBlock(const GridSampleJob& g, const float* packed, std::int64_t n,
                                   std::int64_t p0, std::int64_t count) {
  const float* grid_b = g.grid + (n * g.out_plane() + p0) * 2;
  float* out_b = g.output + n * g.c * g.out_plane() + p0;
  const ChannelGroups cg = ChannelGroupsOf(g);
  with_axis_type(g.padding, g.align_corners, [&](auto* tag) {
    using AxisT = std::remove_pointer_t<decltype(tag)>;
    const AxisT ax(g.w), ay(g.h);
    if (g.mode == Interpolation::bilinear) {
      bilinear_channel_block(g, cg, ax, ay, packed, grid_b, out_b, count);
    } else if (g.mode == Interpolation::nearest) {
      nearest_channel_block(g, cg, ax, ay, packed, grid_b, out_b, count);
    } else {
      bicubic_channel_block(g, cg, ax, ay, packed, grid_b, out_b, count);
    }
  });
  // The channels after the last packed block: the per-channel kernels, on a job of those alone.
  const std::int64_t first = cg.channels();
  if (first < g.c) {
    GridSampleJob rest = g;
    rest.n = 1;
    rest.c = g.c - first;
    rest.input = g.input + (n * g.c + first) * g.in_plane();
    rest.grid = g.grid + n * g.out_plane() * 2;
    rest.output = g.output + (n * g.c + first) * g.out_plane();
    GridSampleForwardBlock(rest, 0, p0, count);
  }
}

#else  // no native FMA (or one lane): the per-channel kernels only

inline ChannelPlan GridSampleChannelPlan(const GridSampleJob&) { return {}; }
inline void GridSamplePackChannels(const GridSampleJob&, std::int64_t, std::int64_t, float*) {}
inline void GridSampleChannelBlock(const GridSampleJob&, const float*, std::int64_t, std::int64_t,
                                   std::int64_t) {}

#endif

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle

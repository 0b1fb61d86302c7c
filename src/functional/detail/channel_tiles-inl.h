// Channel-group tiles of the sampling kernels (grid_sample's 2-D and 3-D forward), per Highway
// target: the input is packed so that each pixel (or voxel) holds L consecutive channels,
// packed[cb][pixel][l] = input[cb*L + l][pixel], with one zero pixel after each block's pixels
// (L = 16 or 8 on AVX-512, 8 on AVX2, 4 on 128-bit targets).
// A sampling tap is then one vector load of L channels, and L output pixels x L channels
// accumulate in registers before one transpose writes them to the L output planes. Included by
// the kernel -inl.h files that use it (the toggle below is Highway's convention).
#if defined(CVATTN_FUNCTIONAL_DETAIL_CHANNEL_TILES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_CHANNEL_TILES_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_CHANNEL_TILES_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_CHANNEL_TILES_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "functional/detail/transpose-inl.h"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Not on HWY_SCALAR (one lane) nor on sizeless SVE vectors (the tile is an array of vectors).
// Defined anew for each target this file is compiled for.
#undef CVATTN_HAVE_CHANNEL_TILES
#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE
#define CVATTN_HAVE_CHANNEL_TILES 1

// Channels per block: kChannelLanes (a transpose block: 8, or 4 on 128-bit targets), and
// kWideChannelLanes, two transpose blocks where a vector holds them (16 on AVX-512), else the same.
// A kernel that reads many taps per pixel (bicubic) halves its loads with the wide blocks.
constexpr std::int64_t kChannelLanes = TransposeBlockSize();
constexpr std::int64_t kWideChannelLanes =
    hn::MaxLanes(hn::ScalableTag<float>()) >= 2 * kChannelLanes ? 2 * kChannelLanes : kChannelLanes;
template <std::int64_t L>
using ChannelTagL = hn::CappedTag<float, L>;

// The packed channel blocks of one image: `wide` blocks of kWideChannelLanes channels, then
// `narrow` blocks of kChannelLanes, each [pixels + 1][lanes] (the last pixel zero), one after
// the other; the channels after them are not packed.
struct ChannelGroups {
  std::int64_t wide = 0, narrow = 0, pixels = 0;
  [[nodiscard]] std::int64_t count() const { return wide + narrow; }
  [[nodiscard]] std::int64_t lanes(std::int64_t b) const {
    return b < wide ? kWideChannelLanes : kChannelLanes;
  }
  // First channel of block b (b <= count()); channels() is that of count().
  [[nodiscard]] std::int64_t first(std::int64_t b) const {
    return b <= wide ? b * kWideChannelLanes
                     : wide * kWideChannelLanes + (b - wide) * kChannelLanes;
  }
  [[nodiscard]] std::int64_t channels() const { return first(count()); }
  // Offset of block b in the packed buffer, and the buffer's size, in floats.
  [[nodiscard]] std::int64_t offset(std::int64_t b) const { return first(b) * (pixels + 1); }
  [[nodiscard]] std::int64_t floats() const { return offset(count()); }
};

// Blocks for c channels of `pixels` pixels: wide ones as far as they go when `wide`, then narrow.
HWY_INLINE ChannelGroups PlanChannelGroups(std::int64_t c, std::int64_t pixels, bool wide) {
  ChannelGroups g;
  g.pixels = pixels;
  g.wide = wide && kWideChannelLanes > kChannelLanes ? c / kWideChannelLanes : 0;
  g.narrow = (c - g.wide * kWideChannelLanes) / kChannelLanes;
  return g;
}

// Block b of the planes at `planes` (plane stride g.pixels, block b's first channel first) into
// packed + g.offset(b).
HWY_INLINE void PackChannelBlock(const ChannelGroups& g, std::int64_t b, const float* planes,
                                 float* packed) {
  constexpr std::int64_t B = TransposeBlockSize();
  const std::int64_t lanes = g.lanes(b), n = g.pixels;
  const float* src = planes + g.first(b) * n;
  float* dst = packed + g.offset(b);
  // Transpose blocks column block by column block, so that a wide block's pixel (two transpose
  // blocks of channels, one cache line) is written whole before the next.
  std::int64_t c0 = 0;
  for (; c0 + B <= n; c0 += B) {
    for (std::int64_t r0 = 0; r0 < lanes; r0 += B) {
      TransposeBlock(src + r0 * n + c0, n, dst + c0 * lanes + r0, lanes);
    }
  }
  for (; c0 < n; ++c0) {
    for (std::int64_t r = 0; r < lanes; ++r) dst[c0 * lanes + r] = src[r * n + c0];
  }
  std::fill(dst + n * lanes, dst + (n + 1) * lanes, 0.0f);
}

// The channels of pixel o (an index into [0, pixels], `pixels` being the zero pixel) of one
// packed block of Lanes(d) channels.
template <class D>
HWY_INLINE hn::VFromD<D> LoadPackedPixel(D d, const float* block, std::int32_t o) {
  return hn::Load(
      d, block + static_cast<std::int64_t>(o) * static_cast<std::int64_t>(hn::MaxLanes(d)));
}

// Stores an L x L tile (pixel j's L channels in tile[j]) transposed: channel l to
// out[l * stride .. + L). Wide tiles as four transpose blocks of their halves.
template <std::int64_t L>
HWY_INLINE void StoreChannelTile(hn::VFromD<ChannelTagL<L>>* tile, float* HWY_RESTRICT out,
                                 std::int64_t stride) {
  constexpr std::int64_t B = TransposeBlockSize();
  if constexpr (L == B) {
    TransposeTileStore(tile, out, stride);
  } else {
    const hn::Half<ChannelTagL<L>> dh;
    static_assert(std::is_same_v<std::remove_const_t<decltype(dh)>, TransposeTag>,
                  "a wide tile is two transpose blocks wide");
    // Channel half by channel half, so that each output row's 2B floats are written together:
    // 16 rows in flight at once, a plane apart, can outnumber the L1 ways of one set (planes of
    // a power-of-two size alias), and then the row's first half is evicted before its second.
    hn::VFromD<TransposeTag> r[B];
    for (std::int64_t ph = 0; ph < 2; ++ph) {
      for (std::int64_t j = 0; j < B; ++j) r[j] = hn::LowerHalf(dh, tile[B * ph + j]);
      TransposeTileStore(r, out + B * ph, stride);
    }
    for (std::int64_t ph = 0; ph < 2; ++ph) {
      for (std::int64_t j = 0; j < B; ++j) r[j] = hn::UpperHalf(dh, tile[B * ph + j]);
      TransposeTileStore(r, out + B * stride + B * ph, stride);
    }
  }
}

// Runs pixel(d, s, p) -> the L channels (d's lanes) of output pixel p read from the packed block
// s, for each of `blocks` blocks of L channels (block_size floats apart) and p in [0, count), and
// writes the results to out[c * out_plane + p]: L pixels per register tile, transposed, then a
// tile of the remaining pixels through a stack buffer.
template <std::int64_t L, class Pixel>
HWY_INLINE void ChannelTilesL(std::int64_t blocks, const float* packed, std::int64_t block_size,
                              float* out, std::int64_t out_plane, std::int64_t count,
                              const Pixel& pixel) {
  const ChannelTagL<L> d;
  for (std::int64_t cb = 0; cb < blocks; ++cb) {
    const float* s = packed + cb * block_size;
    float* o = out + cb * L * out_plane;
    std::int64_t p = 0;
    for (; p + L <= count; p += L) {
      hn::VFromD<ChannelTagL<L>> tile[L];
      for (std::int64_t j = 0; j < L; ++j) tile[j] = pixel(d, s, p + j);
      StoreChannelTile<L>(tile, o + p, out_plane);
    }
    if (p < count) {
      alignas(64) float tile[L][L];
      const std::int64_t rest = count - p;
      for (std::int64_t j = 0; j < rest; ++j) hn::Store(pixel(d, s, p + j), d, tile[j]);
      for (std::int64_t l = 0; l < L; ++l) {
        for (std::int64_t j = 0; j < rest; ++j) o[l * out_plane + p + j] = tile[j][l];
      }
    }
  }
}

// ChannelTilesL over every block of g: out holds g.channels() planes of out_plane.
template <class Pixel>
HWY_INLINE void ChannelTiles(const ChannelGroups& g, const float* packed, float* out,
                             std::int64_t out_plane, std::int64_t count, const Pixel& pixel) {
  if constexpr (kWideChannelLanes != kChannelLanes) {
    ChannelTilesL<kWideChannelLanes>(g.wide, packed, (g.pixels + 1) * kWideChannelLanes, out,
                                     out_plane, count, pixel);
  }
  ChannelTilesL<kChannelLanes>(g.narrow, packed + g.offset(g.wide), (g.pixels + 1) * kChannelLanes,
                               out + g.first(g.wide) * out_plane, out_plane, count, pixel);
}

#endif

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle

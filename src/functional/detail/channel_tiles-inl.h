// Channel-group tiles of the sampling kernels (grid_sample's 2-D and 3-D forward), per Highway
// target: the input is packed so that each pixel (or voxel) holds L consecutive channels,
// packed[cb][pixel][l] = input[cb*L + l][pixel], with one zero pixel after each block's pixels.
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

#include "functional/detail/transpose-inl.h"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Not on HWY_SCALAR (one lane) nor on sizeless SVE vectors (the tile is an array of vectors).
// Defined anew for each target this file is compiled for.
#undef CVATTN_HAVE_CHANNEL_TILES
#if HWY_TARGET != HWY_SCALAR && !HWY_HAVE_SCALABLE
#define CVATTN_HAVE_CHANNEL_TILES 1

constexpr std::int64_t kChannelLanes = TransposeBlockSize();
using ChannelTag = TransposeTag;
using ChannelVec = hn::VFromD<ChannelTag>;

// Channel block of `pixels` pixels starting at src (plane stride `pixels`) into packed
// ([pixels + 1][L], the last pixel zero).
HWY_INLINE void PackChannelBlock(const float* src, std::int64_t pixels, float* packed) {
  Transpose(src, packed, kChannelLanes, pixels);
  std::fill(packed + pixels * kChannelLanes, packed + (pixels + 1) * kChannelLanes, 0.0f);
}

// The L channels of pixel o (an index into [0, pixels], `pixels` being the zero pixel) of one
// packed channel block.
HWY_INLINE ChannelVec LoadPackedPixel(const float* block, std::int32_t o) {
  return hn::Load(ChannelTag(), block + static_cast<std::int64_t>(o) * kChannelLanes);
}

// Runs pixel(s, p) -> ChannelVec (the L channels of output pixel p read from the packed channel
// block s) for each of the `blocks` packed channel blocks (block_size floats apart) and p in
// [0, count), and writes the results to out[c * out_plane + p]: L pixels per register tile,
// transposed, then a tile of the remaining pixels through a stack buffer.
template <class Pixel>
HWY_INLINE void ChannelTiles(std::int64_t blocks, const float* packed, std::int64_t block_size,
                             float* out, std::int64_t out_plane, std::int64_t count,
                             const Pixel& pixel) {
  constexpr std::int64_t L = kChannelLanes;
  for (std::int64_t cb = 0; cb < blocks; ++cb) {
    const float* s = packed + cb * block_size;
    float* o = out + cb * L * out_plane;
    std::int64_t p = 0;
    for (; p + L <= count; p += L) {
      ChannelVec tile[L];
      for (std::int64_t j = 0; j < L; ++j) tile[j] = pixel(s, p + j);
      TransposeTileStore(tile, o + p, out_plane);
    }
    if (p < count) {
      alignas(64) float tile[L][L];
      const std::int64_t rest = count - p;
      for (std::int64_t j = 0; j < rest; ++j) hn::Store(pixel(s, p + j), ChannelTag(), tile[j]);
      for (std::int64_t l = 0; l < L; ++l) {
        for (std::int64_t j = 0; j < rest; ++j) o[l * out_plane + p + j] = tile[j][l];
      }
    }
  }
}

#endif

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle

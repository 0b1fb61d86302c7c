#pragma once
// The pieces of a deform_conv2d call shared by its driver (functional/deform_conv.cpp) and its
// per-target kernels (functional/deform_conv-inl.h). Private to cvattn.
#include <cstdint>
#include <vector>

namespace cvattn::detail {

// The GEMM kernel's register tile: kDeformTileRows pixels x kDeformPanel output channels.
inline constexpr std::int64_t kDeformPanel = 16;
inline constexpr int kDeformTileRows = 6;

struct DeformGeometry {
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

// Taps of one (offset group, kernel tap) for a chunk of output pixels, structure of arrays:
// corner q of pixel p is channels-last pixel index[q][p] (the zero pixel when that corner, or the
// whole sample, lies outside) with weight[q][p] (bilinear weight times the mask).
struct DeformTapBlock {
  std::int32_t* index[4];
  float* weight[4];
};

// The regular sampling grid before offsets, as torchvision computes it: the integer position
// converted to float. y[i * Ho + oy] = oy*sh - ph + i*dh and x[j * Wo + ox] = ox*sw - pw + j*dw.
struct DeformBaseGrid {
  std::vector<float> y, x;
  explicit DeformBaseGrid(const DeformGeometry& g)
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

}  // namespace cvattn::detail

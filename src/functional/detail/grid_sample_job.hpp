#pragma once
// What one grid_sample (or grid_sample_backward) call hands to its per-target block kernels
// (functional/grid_sample-inl.h): the geometry, the options and the tensors' data. Private to
// cvattn; grid_sample.cpp validates everything before filling it in.
#include <cstdint>

#include "cvattn/functional/sampling.hpp"

namespace cvattn::detail {

struct GridSampleJob {
  std::int64_t n, c, h, w, ho, wo;
  functional::Interpolation mode;
  functional::PaddingMode padding;
  bool align_corners;
  const float* input;        // [n, c, h, w]
  const float* grid;         // [n, ho, wo, 2]
  float* output;             // forward: [n, c, ho, wo]
  const float* grad_output;  // backward: [n, c, ho, wo]
  float* grad_grid;          // backward: [n, ho, wo, 2]
  [[nodiscard]] std::int64_t in_plane() const { return h * w; }
  [[nodiscard]] std::int64_t out_plane() const { return ho * wo; }
};

// Channels (from channel 0) that grid_sample's channel-group forward kernels
// (grid_sample_channels-inl.h) compute for an input of c channels and h x w planes in `mode` on
// the SIMD target in use; the rest, all when 0, take the per-channel kernels (grid_sample.cpp;
// the parity test asks).
std::int64_t grid_sample_grouped_channels(std::int64_t c, std::int64_t h, std::int64_t w,
                                          functional::Interpolation mode);

// Output pixels whose taps are computed together: bilinear/nearest forward, and the kernels that
// keep more per pixel (bicubic, backward).
inline constexpr std::int64_t kGridBlock = 1024;
inline constexpr std::int64_t kGridCubicBlock = 256;

}  // namespace cvattn::detail

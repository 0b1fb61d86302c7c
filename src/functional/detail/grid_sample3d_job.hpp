#pragma once
// What one volumetric grid_sample (or its backward) call hands to its per-target kernels
// (functional/grid_sample3d-inl.h): the geometry, the options and the tensors' data. Private to
// cvattn; grid_sample3d.cpp validates everything before filling it in.
#include <cstdint>

#include "cvattn/functional/sampling.hpp"

namespace cvattn::detail {

struct GridSample3dJob {
  std::int64_t n, c, d, h, w, dout, hout, wout;
  functional::Interpolation mode;
  functional::PaddingMode padding;
  bool align_corners;
  const float* input;        // [n, c, d, h, w]
  const float* grid;         // [n, dout, hout, wout, 3]
  float* output;             // forward: [n, c, dout, hout, wout]
  const float* grad_output;  // backward: [n, c, dout, hout, wout]
  float* grad_input;         // backward: [n, c, d, h, w], zeroed by the caller
  float* grad_grid;          // backward: [n, dout, hout, wout, 3], zeroed by the caller
  [[nodiscard]] std::int64_t in_volume() const { return d * h * w; }
  [[nodiscard]] std::int64_t out_volume() const { return dout * hout * wout; }
};

// Channels (from channel 0) that grid_sample3d's channel-group forward kernels compute for an
// input of c channels and volumes of `volume` voxels in `mode` on the SIMD target in use; the
// rest, all when 0, are sampled channel by channel (the parity test asks).
std::int64_t grid_sample3d_grouped_channels(std::int64_t c, std::int64_t volume,
                                            functional::Interpolation mode);

// Output voxels whose taps are computed together.
inline constexpr std::int64_t kGrid3dBlock = 256;

}  // namespace cvattn::detail

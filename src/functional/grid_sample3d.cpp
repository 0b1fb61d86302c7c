// Volumetric grid_sample and its backward (sampling3d.hpp): validation, the parallel split and
// the runtime SIMD dispatch (core/dispatch.hpp). The per-target kernels, which reproduce
// PyTorch's scalar 3-D CPU kernel, are in grid_sample3d-inl.h. This file is built without FMA
// contraction, so that they keep PyTorch's float32 operation order.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/grid_sample3d-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/grid_sample3d-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cstdint>

#include "core/dispatch.hpp"
#include "core/parallel_for.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/sampling3d.hpp"
#include "functional/detail/channel_plan.hpp"
#include "functional/detail/grid_sample3d_job.hpp"

namespace cvattn::detail {

HWY_EXPORT(GridSample3dForwardBlock);
HWY_EXPORT(GridSample3dBackwardVolume);
HWY_EXPORT(GridSample3dChannelPlan);
HWY_EXPORT(GridSample3dPackChannels);
HWY_EXPORT(GridSample3dChannelBlock);

namespace {

// The kernels of the target in use (chosen once per call, not per block).
using Forward3dFn = void (*)(const GridSample3dJob&, std::int64_t, std::int64_t, std::int64_t);
using Pack3dFn = void (*)(const GridSample3dJob&, std::int64_t, std::int64_t, float*);
using ChannelBlock3dFn = void (*)(const GridSample3dJob&, const float*, std::int64_t, std::int64_t,
                                  std::int64_t);
using Backward3dFn = void (*)(const GridSample3dJob&, std::int64_t);
Forward3dFn forward3d_kernel() { return CVATTN_DISPATCH(GridSample3dForwardBlock); }
Pack3dFn pack3d_kernel() { return CVATTN_DISPATCH(GridSample3dPackChannels); }
ChannelBlock3dFn channel_block3d_kernel() { return CVATTN_DISPATCH(GridSample3dChannelBlock); }
Backward3dFn backward3d_kernel() { return CVATTN_DISPATCH(GridSample3dBackwardVolume); }

}  // namespace

// The channel blocks grid_sample3d packs for job g: none for C < 8 or a volume (plus its zero
// voxel) not indexable in int32.
ChannelPlan channel_plan3d(const GridSample3dJob& g) {
  if (g.c < 8 || g.in_volume() >= (std::int64_t{1} << 30)) return {};
  return CVATTN_DISPATCH(GridSample3dChannelPlan)(g);
}

std::int64_t grid_sample3d_grouped_channels(std::int64_t c, std::int64_t volume,
                                            functional::Interpolation mode) {
  GridSample3dJob g{};
  g.c = c, g.d = 1, g.h = 1, g.w = volume, g.mode = mode;
  return channel_plan3d(g).channels;
}

}  // namespace cvattn::detail

namespace cvattn::functional {
namespace {

using detail::GridSample3dJob;
using detail::kGrid3dBlock;

GridSample3dJob validate(const Tensor& input, const Tensor& grid, const GridSampleOptions& options,
                         const char* where) {
  const auto m = static_cast<int>(options.mode());
  const auto p = static_cast<int>(options.padding_mode());
  CVATTN_CHECK(m >= 0 && m <= 2, ValueError, where, ": unknown interpolation mode ", m);
  CVATTN_CHECK(p >= 0 && p <= 2, ValueError, where, ": unknown padding mode ", p);
  CVATTN_CHECK(options.mode() != Interpolation::bicubic, ValueError, where,
               ": mode 'bicubic' supports 4-D input only (PyTorch: bicubic interpolation only "
               "supports 4D input), got 5-D input ",
               to_string(input.shape()));
  check_rank(input, 5, "input", where);
  check_rank(grid, 5, "grid", where);
  const Shape& s = input.shape();
  CVATTN_CHECK(s[2] >= 1 && s[3] >= 1 && s[4] >= 1, ShapeError, where,
               ": tensor 'input' expected non-empty spatial dimensions, got ", to_string(s));
  CVATTN_CHECK(grid.dim(0) == s[0] && grid.dim(4) == 3, ShapeError, where,
               ": tensor 'grid' expected ", to_string({s[0], kAny, kAny, kAny, 3}),
               " (batch of 'input' ", to_string(s), "), got ", to_string(grid.shape()));
  (void)checked_numel({s[0], s[1], grid.dim(1), grid.dim(2), grid.dim(3)}, where);
  GridSample3dJob job{};
  job.n = s[0], job.c = s[1], job.d = s[2], job.h = s[3], job.w = s[4];
  job.dout = grid.dim(1), job.hout = grid.dim(2), job.wout = grid.dim(3);
  job.mode = options.mode();
  job.padding = options.padding_mode();
  job.align_corners = options.align_corners();
  job.input = input.data();
  job.grid = grid.data();
  return job;
}

}  // namespace

Tensor grid_sample3d(const Tensor& input, const Tensor& grid, const GridSampleOptions& options) {
  GridSample3dJob g = validate(input, grid, options, "grid_sample");
  Tensor output = Tensor::empty({g.n, g.c, g.dout, g.hout, g.wout});
  if (output.numel() == 0) return output;
  g.output = output.data();
  const std::int64_t vol_out = g.out_volume();
  const std::int64_t blocks = (vol_out + kGrid3dBlock - 1) / kGrid3dBlock;
  if (const detail::ChannelPlan plan = detail::channel_plan3d(g); plan.blocks > 0) {
    // Volume by volume: its channel blocks packed into one workspace (reused per volume), then
    // its blocks of output voxels (grid_sample3d-inl.h).
    const detail::Workspace packed({plan.floats}, "grid_sample (channel groups)");
    const detail::Pack3dFn pack = detail::pack3d_kernel();
    const detail::ChannelBlock3dFn block = detail::channel_block3d_kernel();
    for (std::int64_t n = 0; n < g.n; ++n) {
      detail::parallel_for(plan.blocks, [&](std::int64_t cb) { pack(g, n, cb, packed.data()); });
      detail::parallel_for(blocks, [&](std::int64_t b) {
        const std::int64_t p0 = b * kGrid3dBlock;
        block(g, packed.data(), n, p0, std::min(kGrid3dBlock, vol_out - p0));
      });
    }
    return output;
  }
  const detail::Forward3dFn kernel = detail::forward3d_kernel();
  detail::parallel_for(g.n * blocks, [&](std::int64_t task) {
    const std::int64_t p0 = (task % blocks) * kGrid3dBlock;
    kernel(g, task / blocks, p0, std::min(kGrid3dBlock, vol_out - p0));
  });
  return output;
}

GridSampleGrads grid_sample3d_backward(const Tensor& input, const Tensor& grid,
                                       const Tensor& grad_output,
                                       const GridSampleOptions& options) {
  const char* where = "grid_sample_backward";
  GridSample3dJob g = validate(input, grid, options, where);
  check_defined(grad_output, "grad_output", where);
  const Shape out_shape{g.n, g.c, g.dout, g.hout, g.wout};
  CVATTN_CHECK(grad_output.shape() == out_shape, ShapeError, where,
               ": tensor 'grad_output' expected ", to_string(out_shape),
               " (the shape of grid_sample's output), got ", to_string(grad_output.shape()));
  GridSampleGrads grads{Tensor::zeros(input.shape()), Tensor::zeros(grid.shape())};
  if (g.n == 0 || g.out_volume() == 0 || g.c == 0) return grads;
  g.grad_output = grad_output.data();
  g.grad_input = grads.grad_input.data();
  g.grad_grid = grads.grad_grid.data();
  // One task per volume: grad_input of a volume is scattered by that task alone.
  const detail::Backward3dFn kernel = detail::backward3d_kernel();
  detail::parallel_for(g.n, [&](std::int64_t n) { kernel(g, n); });
  return grads;
}

}  // namespace cvattn::functional
#endif  // HWY_ONCE

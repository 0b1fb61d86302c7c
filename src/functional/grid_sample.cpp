// grid_sample and grid_sample_backward (docs/modules.md §8): validation, the parallel split into
// blocks of output pixels and the runtime SIMD dispatch (core/dispatch.hpp). The per-target block
// kernels, which reproduce PyTorch's x86-64 CPU kernel, are in grid_sample-inl.h; the
// channel-group forward kernels for C >= 8 (which include them) in grid_sample_channels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/grid_sample_channels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/grid_sample_channels-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/dispatch.hpp"
#include "core/parallel_for.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/functional/sampling3d.hpp"
#include "functional/detail/channel_plan.hpp"
#include "functional/detail/grid_sample_job.hpp"

namespace cvattn::detail {

HWY_EXPORT(GridSampleForwardBlock);
HWY_EXPORT(GridSampleBackwardBlock);
HWY_EXPORT(GridSampleChannelPlan);
HWY_EXPORT(GridSamplePackChannels);
HWY_EXPORT(GridSampleChannelBlock);

namespace {

// The block kernels of the target in use (chosen once per call, not per block).
using ForwardBlockFn = void (*)(const GridSampleJob&, std::int64_t, std::int64_t, std::int64_t);
using BackwardBlockFn = void (*)(const GridSampleJob&, std::int64_t, std::int64_t, std::int64_t,
                                 float*);
ForwardBlockFn forward_block_kernel() { return CVATTN_DISPATCH(GridSampleForwardBlock); }
BackwardBlockFn backward_block_kernel() { return CVATTN_DISPATCH(GridSampleBackwardBlock); }

// The channel-group kernels (grid_sample_channels-inl.h) of the target in use and their plan
// for job g, with no blocks when grid_sample does not use them: the target has none, C < 8, or
// the plane plus its zero pixel is not indexable in int32.
struct ChannelKernels {
  ChannelPlan plan;
  void (*pack)(const GridSampleJob&, std::int64_t, std::int64_t, float*);
  void (*block)(const GridSampleJob&, const float*, std::int64_t, std::int64_t, std::int64_t);
};
ChannelKernels channel_kernels(const GridSampleJob& g) {
  ChannelKernels k{CVATTN_DISPATCH(GridSampleChannelPlan)(g),
                   CVATTN_DISPATCH(GridSamplePackChannels),
                   CVATTN_DISPATCH(GridSampleChannelBlock)};
  if (g.c < 8 || g.in_plane() >= (std::int64_t{1} << 30)) k.plan = ChannelPlan{};
  return k;
}

}  // namespace

std::int64_t grid_sample_grouped_channels(std::int64_t c, std::int64_t h, std::int64_t w,
                                          functional::Interpolation mode) {
  GridSampleJob g{};
  g.c = c, g.h = h, g.w = w, g.mode = mode;
  return channel_kernels(g).plan.channels;
}

}  // namespace cvattn::detail

namespace cvattn::functional {
namespace {

using detail::GridSampleJob;
using detail::kGridBlock;
using detail::kGridCubicBlock;

// The job of the call, but for the tensors the caller allocates.
GridSampleJob validate(const Tensor& input, const Tensor& grid, const GridSampleOptions& options,
                       const char* where) {
  check_rank(input, 4, "input", where);
  check_rank(grid, 4, "grid", where);
  const auto s = input.nchw("input");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, where,
               ": tensor 'input' expected non-empty spatial dimensions, got ",
               to_string(input.shape()));
  CVATTN_CHECK(grid.dim(0) == s.n && grid.dim(3) == 2, ShapeError, where,
               ": tensor 'grid' expected ", to_string({s.n, kAny, kAny, 2}), " (batch of 'input' ",
               to_string(input.shape()), "), got ", to_string(grid.shape()));
  GridSampleJob job{};
  job.n = s.n, job.c = s.c, job.h = s.h, job.w = s.w, job.ho = grid.dim(1), job.wo = grid.dim(2);
  job.mode = options.mode();
  job.padding = options.padding_mode();
  job.align_corners = options.align_corners();
  job.input = input.data();
  job.grid = grid.data();
  return job;
}

void check_mode(const GridSampleOptions& options, const char* where) {
  const auto m = static_cast<int>(options.mode());
  const auto p = static_cast<int>(options.padding_mode());
  CVATTN_CHECK(m >= 0 && m <= 2, ValueError, where, ": unknown interpolation mode ", m);
  CVATTN_CHECK(p >= 0 && p <= 2, ValueError, where, ": unknown padding mode ", p);
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleOptions& options) {
  if (input.rank() == 5) return grid_sample3d(input, grid, options);  // volumetric: sampling3d.hpp
  const char* where = "grid_sample";
  check_mode(options, where);
  GridSampleJob g = validate(input, grid, options, where);
  Tensor output = Tensor::empty({g.n, g.c, g.ho, g.wo});
  if (output.numel() == 0) return output;
  g.output = output.data();
  const std::int64_t block = g.mode == Interpolation::bicubic ? kGridCubicBlock : kGridBlock;
  const std::int64_t blocks = (g.out_plane() + block - 1) / block;
  if (const detail::ChannelKernels k = detail::channel_kernels(g); k.plan.blocks > 0) {
    // C >= 8: image by image, its channel blocks packed into one workspace (reused per image),
    // then its blocks of output pixels (grid_sample_channels-inl.h).
    const detail::Workspace packed({k.plan.floats}, "grid_sample (channel groups)");
    for (std::int64_t n = 0; n < g.n; ++n) {
      detail::parallel_for(k.plan.blocks,
                           [&](std::int64_t cb) { k.pack(g, n, cb, packed.data()); });
      detail::parallel_for(blocks, [&](std::int64_t b) {
        const std::int64_t p0 = b * block;
        k.block(g, packed.data(), n, p0, std::min(block, g.out_plane() - p0));
      });
    }
    return output;
  }
  const detail::ForwardBlockFn kernel = detail::forward_block_kernel();
  detail::parallel_for(g.n * blocks, [&](std::int64_t task) {
    const std::int64_t p0 = (task % blocks) * block;
    kernel(g, task / blocks, p0, std::min(block, g.out_plane() - p0));
  });
  return output;
}

GridSampleGrads grid_sample_backward(const Tensor& input, const Tensor& grid,
                                     const Tensor& grad_output, const GridSampleOptions& options) {
  if (input.rank() == 5) return grid_sample3d_backward(input, grid, grad_output, options);
  const char* where = "grid_sample_backward";
  check_mode(options, where);
  GridSampleJob g = validate(input, grid, options, where);
  check_defined(grad_output, "grad_output", where);
  CVATTN_CHECK(grad_output.shape() == Shape({g.n, g.c, g.ho, g.wo}), ShapeError, where,
               ": tensor 'grad_output' expected ", to_string({g.n, g.c, g.ho, g.wo}),
               " (the shape of grid_sample's output), got ", to_string(grad_output.shape()));
  // grad_input is zeroed image by image right before its scatter (below), while still cached.
  // Every kernel writes all of grad_grid.
  GridSampleGrads grads{Tensor::empty(input.shape()), Tensor::empty(grid.shape())};
  if (g.n == 0 || g.out_plane() == 0) {
    grads.grad_input.fill(0.0f);
    return grads;
  }

  g.grad_output = grad_output.data();
  g.grad_grid = grads.grad_grid.data();
  float* gin = grads.grad_input.data();
  const std::int64_t blocks = (g.out_plane() + kGridCubicBlock - 1) / kGridCubicBlock;
  const std::int64_t image = g.c * g.in_plane();

  // Scatter into grad_input without races: whole images per task when there are enough of
  // them; otherwise every worker accumulates into its own copy, summed afterwards.
  const std::int64_t threads = detail::max_threads();
  const std::int64_t tasks = g.n * blocks;
  const std::int64_t workers = (threads > 1 && g.n < threads) ? std::min(threads, tasks) : 1;
  std::vector<Tensor> partial;
  for (std::int64_t t = 1; t < workers; ++t) partial.push_back(Tensor::zeros(input.shape()));

  const detail::BackwardBlockFn kernel = detail::backward_block_kernel();
  auto run_task = [&](std::int64_t task, float* gin_all) {
    const std::int64_t p0 = (task % blocks) * kGridCubicBlock;
    kernel(g, task / blocks, p0, std::min(kGridCubicBlock, g.out_plane() - p0), gin_all);
  };
  if (workers == 1) {
    detail::parallel_for(g.n, [&](std::int64_t n) {
      std::fill(gin + n * image, gin + (n + 1) * image, 0.0f);
      for (std::int64_t b = 0; b < blocks; ++b) run_task(n * blocks + b, gin);
    });
  } else {
    grads.grad_input.fill(0.0f);
    detail::parallel_for(workers, [&](std::int64_t t) {
      float* target = t == 0 ? gin : partial[static_cast<std::size_t>(t - 1)].data();
      for (std::int64_t task = tasks * t / workers; task < tasks * (t + 1) / workers; ++task) {
        run_task(task, target);
      }
    });
  }

  if (!partial.empty()) {
    const std::int64_t total = grads.grad_input.numel();
    detail::parallel_chunks(total, [&](std::int64_t begin, std::int64_t end) {
      for (const Tensor& part : partial) {
        const float* src = part.data();
        for (std::int64_t i = begin; i < end; ++i) gin[i] += src[i];
      }
    });
  }
  return grads;
}

}  // namespace cvattn::functional
#endif  // HWY_ONCE

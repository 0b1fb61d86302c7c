#pragma once
// Volumetric sampling: grid_sample on 5-D input (trilinear "bilinear" and nearest) and its
// backward, reproducing torch.nn.functional.grid_sample's 3-D CPU kernel
// (aten/src/ATen/native/GridSampler.cpp, grid_sampler_3d_cpu_impl), including its scalar float32
// coordinate arithmetic and its treatment of NaN and +-inf grid values. Grids are
// [N, Do, Ho, Wo, 3] tensors of normalised (x, y, z) coordinates: x indexes W, y H, z D.
// functional::grid_sample / grid_sample_backward call these for 5-D input, and
// functional::affine_grid makes 3-D grids for a 5-entry size {N, C, D, H, W} with theta [N, 3, 4].
// Bicubic is 2-D only (as in PyTorch): ValueError naming it.
//
// Where the 3-D kernel differs from the 2-D one (docs/modules.md §8, which follows PyTorch's
// vectorised 2-D kernel):
//   nearest rounds half away from zero (std::round; pixel coordinate -0.5 is outside), the 2-D
//     kernel half to even (PyTorch >= 2.1 and ONNX round half to even in 3-D too);
//   non-finite and beyond-int32 coordinates: zeros padding -> outside (output 0, also for
//     trilinear, where 2-D gives NaN); border: NaN and +inf -> size-1, -inf -> 0; reflection:
//     NaN/inf -> size-1 (std::min(size-1, std::max(NaN, 0)) keeps the limit);
//   backward maps NaN after padding to outside (PyTorch's _set_grad rules), for nearest too, so
//     a NaN coordinate scatters nothing under border/reflection padding.
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/sampling.hpp"

namespace cvattn::functional {

// input [N, C, D, H, W], grid [N, Do, Ho, Wo, 3] -> output [N, C, Do, Ho, Wo].
[[nodiscard]] CVATTN_EXPORT Tensor grid_sample3d(const Tensor& input, const Tensor& grid,
                                                 const GridSampleOptions& options = {});

// What autograd returns for the 5-D grid_sample(input, grid, options).backward(grad_output):
// grad_input [N, C, D, H, W] and grad_grid [N, Do, Ho, Wo, 3] (zeros for nearest).
[[nodiscard]] CVATTN_EXPORT GridSampleGrads
grid_sample3d_backward(const Tensor& input, const Tensor& grid, const Tensor& grad_output,
                       const GridSampleOptions& options = {});

}  // namespace cvattn::functional

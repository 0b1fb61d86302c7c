#pragma once
// Spatial-transformer sampling: sampling grids (affine, projective, thin-plate spline) and
// grid_sample with its backward, reproducing torch.nn.functional.affine_grid / grid_sample
// (docs/modules.md §7, §8). Grids are [N, Ho, Wo, 2] tensors of normalised (x, y) coordinates where
// -1 and +1 are the input's edges (align_corners=false) or its corner pixel centres (true).
#include <cstdint>
#include <string>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

// grid_sample's `mode`.
enum class Interpolation { bilinear, nearest, bicubic };
// grid_sample's `padding_mode`: what a sample outside the input reads.
enum class PaddingMode { zeros, border, reflection };

// "bilinear" / "nearest" / "bicubic"; ValueError on any other word.
[[nodiscard]] CVATTN_EXPORT Interpolation parse_interpolation(const std::string& word);
// "zeros" / "border" / "reflection"; ValueError on any other word.
[[nodiscard]] CVATTN_EXPORT PaddingMode parse_padding_mode(const std::string& word);
// The PyTorch word of a mode (named so as not to hide cvattn::to_string(Shape) in this namespace).
[[nodiscard]] CVATTN_EXPORT const char* interpolation_name(Interpolation mode) noexcept;
[[nodiscard]] CVATTN_EXPORT const char* padding_mode_name(PaddingMode mode) noexcept;

struct GridSampleOptions {
  CVATTN_ARG(Interpolation, mode) = Interpolation::bilinear;
  CVATTN_ARG(PaddingMode, padding_mode) = PaddingMode::zeros;
  CVATTN_ARG(bool, align_corners) = false;
};

// theta [N, 2, 3] -> grid [N, H, W, 2] for size = {N, C, H, W} (C unused), with PyTorch's float32
// base grid: grid[n,h,w,k] = theta[n,k,0]*x_w + theta[n,k,1]*y_h + theta[n,k,2].
// 3-D: size = {N, C, D, H, W} with theta [N, 3, 4] -> grid [N, D, H, W, 3] of (x, y, z).
[[nodiscard]] CVATTN_EXPORT Tensor affine_grid(const Tensor& theta, const Shape& size,
                                               bool align_corners = false);

// Gradient of affine_grid with respect to theta: grad_grid [N, H, W, 2] -> grad_theta [N, 2, 3]
// (3-D: grad_grid [N, D, H, W, 3] -> grad_theta [N, 3, 4]).
[[nodiscard]] CVATTN_EXPORT Tensor affine_grid_backward(const Tensor& grad_grid, const Shape& size,
                                                        bool align_corners = false);

// Homography in normalised coordinates: homography [N, 3, 3] -> grid [N, H, W, 2] with
// (x', y', w') = H (x_w, y_h, 1) and grid = (x'/w', y'/w') on the affine_grid base points.
// Evaluated in double. A point on the horizon (|w'| < 1e-12) divides by +-1e-12 (the sign of w',
// + for 0) instead of 0, and every quotient is clamped to [-1e6, 1e6]: such points lie far
// outside the input, so they sample padding (zeros: 0, border: the nearest edge). NaN entries in
// the homography propagate.
[[nodiscard]] CVATTN_EXPORT Tensor projective_grid(const Tensor& homography, const Shape& size,
                                                   bool align_corners = false);

// Thin-plate-spline grid (Jaderberg et al., STN): the smooth map T with T(target_k) = source_k,
//   T(p) = a0 + a1*p.x + a2*p.y + sum_k w_k U(|p - target_k|^2),  U(d) = d log d, U(0) = 0,
// per output coordinate, where [w; a] solves the (K+3) x (K+3) system
//   [ U(|t_i - t_j|^2)  [1 t_i] ] [w]   [source]
//   [ [1 t_j]^T            0    ] [a] = [  0   ]
// source_points [N, K, 2] are (x, y) positions in the input, target_points [K, 2] (shared) or
// [N, K, 2] their positions in the output, both normalised; K >= 3. p runs over the
// affine_grid base points of size {N, C, H, W}. Solved and evaluated in double.
// ValueError when the target points are degenerate (duplicates, or all on one line).
[[nodiscard]] CVATTN_EXPORT Tensor tps_grid(const Tensor& source_points,
                                            const Tensor& target_points, const Shape& size,
                                            bool align_corners = false);

// A rows x cols lattice of control points spanning [-1, 1]^2, row-major (y outer), as
// [rows*cols, 2] (x, y): the usual fixed target points of a TPS transformer. rows, cols >= 2.
[[nodiscard]] CVATTN_EXPORT Tensor regular_control_points(std::int64_t rows, std::int64_t cols);

// input [N, C, Hin, Win], grid [N, Ho, Wo, 2] -> output [N, C, Ho, Wo], exactly as
// torch.nn.functional.grid_sample on x86-64 CPU, including NaN/inf grid values (docs/modules.md
// §8.4). 5-D input [N, C, D, H, W] with grid [N, Do, Ho, Wo, 3] runs grid_sample3d
// (sampling3d.hpp).
[[nodiscard]] CVATTN_EXPORT Tensor grid_sample(const Tensor& input, const Tensor& grid,
                                               const GridSampleOptions& options = {});

struct GridSampleGrads {
  Tensor grad_input;  // [N, C, Hin, Win]
  Tensor grad_grid;   // [N, Ho, Wo, 2]
};

// What autograd returns for grid_sample(input, grid, options).backward(grad_output), with
// grad_output [N, C, Ho, Wo]. All three modes (docs/modules.md §8.6).
[[nodiscard]] CVATTN_EXPORT GridSampleGrads
grid_sample_backward(const Tensor& input, const Tensor& grid, const Tensor& grad_output,
                     const GridSampleOptions& options = {});

}  // namespace cvattn::functional

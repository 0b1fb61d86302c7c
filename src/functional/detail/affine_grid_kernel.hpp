#pragma once
// One row of affine_grid (functional/sampling.cpp): [x, y, 1] times theta^T for the base
// x-coordinates xs[0..w) of a grid row at height y, interleaved (gx, gy) into out[0..2w). Rounded
// as PyTorch's GEMM rounds it (x*t0, then y*t1 fused onto it, then + t2), so the grid stays
// bit-exact: vectors on targets with a fused multiply-add, scalar std::fma on the others (a
// baseline x86-64 build cannot inline std::fma, which made every element a libm call).
#include <cstdint>

namespace cvattn::detail {

// affine_grid_rows writes `rows` consecutive rows of one grid, row r at height ys[r], to
// out + r * 2w, in one dispatch (a dispatch per 224-wide row was ~5 % of affine_grid).
void affine_grid_rows(const float* xs, const float* ys, std::int64_t rows, const float* theta,
                      float* out, std::int64_t w);

// `rows` rows of the 3-D affine_grid at depth z, row r at height ys[r] to out + r * 3w, in one
// dispatch: [x, y, z, 1] times theta [3, 4]^T, interleaved (gx, gy, gz); rounded as PyTorch's
// GEMM (x*r0, then y*r1 and z*r2 fused onto it in turn, then + r3), bit-exact on every target as
// above. (A dispatch per 32-wide row was 13 % of a [1, 3, 32, 32, 32] grid in the portable build.)
void affine_grid_rows_3d(const float* xs, const float* ys, std::int64_t rows, float z,
                         const float* theta, float* out, std::int64_t w);

}  // namespace cvattn::detail

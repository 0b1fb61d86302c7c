#pragma once
// One row of affine_grid (functional/sampling.cpp): [x, y, 1] times theta^T for the base
// x-coordinates xs[0..w) of a grid row at height y, interleaved (gx, gy) into out[0..2w). Rounded
// as PyTorch's GEMM rounds it (x*t0, then y*t1 fused onto it, then + t2), so the grid stays
// bit-exact: vectors on targets with a fused multiply-add, scalar std::fma on the others (a
// baseline x86-64 build cannot inline std::fma, which made every element a libm call).
#include <cstdint>

namespace cvattn::detail {

void affine_grid_row(const float* xs, float y, const float* theta, float* out, std::int64_t w);

}  // namespace cvattn::detail

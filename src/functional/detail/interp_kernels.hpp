#pragma once
// One plane of separable interpolate (functional/interpolate.cpp, bilinear and bicubic) as a
// runtime-dispatched Highway kernel (bodies in interp_kernels-inl.h, reference twin in
// functional/reference/interp_kernels.hpp). One dispatch per plane, not per row: at 56x56 ->
// 112x112 the per-row calls were 9 % of the portable build's time (docs/performance.md). The sums
// run in the order written; a target with FMA may fuse a multiply into the add that follows it
// (GCC contracts C++ by default), as the plain loops did in a native build. Private to cvattn.
#include <cstdint>

namespace cvattn::functional::detail {

// The taps of one axis, one plane per tap: output o (o < n) reads input index[j * n + o] with
// weight weight[j * n + o], for j < k (2 or 4). Each tap's indices do not decrease with o, and
// index[o] <= index[j * n + o] <= index[(k - 1) * n + o].
struct InterpAxis {
  int k = 2;
  std::int64_t n = 0;
  const std::int32_t* index = nullptr;
  const float* weight = nullptr;
};

// Plane `in` [h, w] -> `out` [ty.n, tx.n], with as many taps along H as along W (tx.k == ty.k,
// one mode for both axes). First along W: tmp row r (of tx.n) = ((tx.weight *
// in row r [tx.index]) summed over the taps in order), for every r with used[r] != 0 (every row
// a ty tap reads must be). Then along H: out row o = the ty taps' weighted sum of tmp rows, in
// tap order. tx indices lie in [0, w), ty indices in [0, h). Along W, where the taps of a vector
// of outputs span at most two vectors of input (upsampling, and downsampling to half the size)
// on targets of 8 lanes or more, they are lane permutations of those loads, without gathers
// (slow on AMD's cores); elsewhere a scalar loop.
void interp_plane(const float* in, std::int64_t h, std::int64_t w, const InterpAxis& tx,
                  const InterpAxis& ty, const unsigned char* used, float* tmp, float* out);

}  // namespace cvattn::functional::detail

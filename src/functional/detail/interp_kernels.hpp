#pragma once
// Planes of separable interpolate (functional/interpolate.cpp, every mode) as a
// runtime-dispatched Highway kernel (bodies in interp_kernels-inl.h, reference twin in
// functional/reference/interp_kernels.hpp). One dispatch per run of planes, not per row: at
// 56x56 -> 112x112 the per-row calls were 9 % of the portable build's time (docs/performance.md).
// The sums run in the order written; a target with FMA may fuse a multiply into the add that
// follows it (GCC contracts C++ by default), as the plain loops did in a native build. Private to
// cvattn.
#include <cstdint>

namespace cvattn::functional::detail {

// The taps of one axis, one plane per tap: output o (o < n) reads input index[j * n + o] with
// weight weight[j * n + o], for j < k (1, 2 or 4; one tap, nearest, has its weights unread).
// Each tap's indices do not decrease with o, and
// index[o] <= index[j * n + o] <= index[(k - 1) * n + o].
struct InterpAxis {
  int k = 2;
  std::int64_t n = 0;
  const std::int32_t* index = nullptr;
  const float* weight = nullptr;
};

// `planes` consecutive planes `in` [planes, h, w] -> `out` [planes, ty.n, tx.n], each as follows,
// with as many taps along H as along W (tx.k == ty.k, one mode for both axes). First along W: tmp
// row r (of tx.n) = ((tx.weight * in row r [tx.index]) summed over the taps in order), for every r
// with used[r] != 0 (every row a ty tap reads must be). Then along H: out row o = the ty taps'
// weighted sum of tmp rows, in tap order. tx indices lie in [0, w), ty indices in [0, h). Along W,
// where the taps of a vector of outputs span at most two vectors of input (upsampling, and
// downsampling to half the size) on targets of 8 lanes or more, they are lane permutations of those
// loads, without gathers (slow on AMD's cores); elsewhere a scalar loop. With one tap (nearest) out
// row o is in row ty.index[o] read at the tx indices, exact copies written straight to `out`; used
// and tmp are not read (may be null).
void interp_planes(const float* in, std::int64_t planes, std::int64_t h, std::int64_t w,
                   const InterpAxis& tx, const InterpAxis& ty, const unsigned char* used,
                   float* tmp, float* out);

}  // namespace cvattn::functional::detail

#pragma once
// The blend along H of separable interpolate (functional/interpolate.cpp, bilinear and bicubic)
// as a runtime-dispatched Highway kernel (bodies in interp_kernels-inl.h, reference twin in
// functional/reference/interp_kernels.hpp). The sums run in the order written; a target with FMA
// may fuse a multiply into the add that follows it (GCC contracts C++ by default), as the plain
// loops did in a native build. Private to cvattn.
#include <cstdint>

namespace cvattn::functional::detail {

// Along H: o[x] = ((w[0] * t[0][x] + w[1] * t[1][x]) + ...) over k (2 or 4) rows, for x < n.
void interp_blend(const float* const* t, const float* w, int k, std::int64_t n, float* o);

}  // namespace cvattn::functional::detail

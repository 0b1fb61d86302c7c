#pragma once
// Runtime SIMD dispatch for the kernels in functional/ (Highway,
// docs/performance.md#simd-dispatch). A kernel source includes its per-target bodies through
// hwy/foreach_target.h, exports them with HWY_EXPORT, and calls them through CVATTN_DISPATCH so
// that CVATTN_SIMD is honoured.
#include <hwy/highway.h>

namespace cvattn::detail {

// Applies CVATTN_SIMD the first time it is called; cheap afterwards.
void simd_init();

}  // namespace cvattn::detail

#define CVATTN_DISPATCH(fn) (::cvattn::detail::simd_init(), HWY_DYNAMIC_DISPATCH(fn))

#pragma once
// Runtime SIMD dispatch for the kernels in functional/ (Highway,
// docs/performance.md#simd-dispatch). A kernel source includes its per-target bodies through
// hwy/foreach_target.h, exports them with HWY_EXPORT, and calls them through CVATTN_DISPATCH so
// that CVATTN_SIMD is honoured.
#include <hwy/highway.h>

#include <atomic>

namespace cvattn::detail {

// Whether the CPU has PREFETCHW (CPUID 0x80000001 ECX bit 8; core/simd.cpp, read at load time,
// false before that and off x86). Every AVX-512 CPU has it; the SSE4 and AVX2 bodies of a kernel
// ask this before issuing it (functional/grid_sample-inl.h).
extern const bool g_cpu_prefetchw;

// Set once CVATTN_SIMD has been applied (core/simd.cpp).
extern std::atomic<bool> g_simd_ready;
void simd_init_once();

// Applies CVATTN_SIMD the first time it is called. Afterwards one load: kernels are dispatched
// per row in places (im2col's strided gathers), where std::call_once's library call cost 3-6 %
// of a stride-2 conv (perf, Zen 5).
inline void simd_init() {
  if (!g_simd_ready.load(std::memory_order_acquire)) simd_init_once();
}

}  // namespace cvattn::detail

#define CVATTN_DISPATCH(fn) (::cvattn::detail::simd_init(), HWY_DYNAMIC_DISPATCH(fn))

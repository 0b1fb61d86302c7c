#pragma once
// Which SIMD code paths cvattn was compiled with and which one runs. Kernels are compiled for
// several instruction sets (Highway targets: AVX3 = AVX-512, AVX2, SSE4, NEON on aarch64, and a
// portable EMU128) and the best one this CPU supports is chosen at run time. The environment
// variable CVATTN_SIMD (e.g. CVATTN_SIMD=avx2) caps the choice for the whole process, read once
// at the first kernel call; set_max_target does the same from code (tests, benchmarks).
#include <string>
#include <vector>

#include "cvattn/export.hpp"

namespace cvattn::simd {

// Lower-case target names compiled into the library, best first ("avx3", "avx2", "sse4",
// "emu128").
[[nodiscard]] CVATTN_EXPORT std::vector<std::string> compiled_targets();
// The compiled targets this CPU can run, best first.
[[nodiscard]] CVATTN_EXPORT std::vector<std::string> supported_targets();
// The target the kernels dispatch to now.
[[nodiscard]] CVATTN_EXPORT std::string current_target();
// Dispatch to no target better than `name` (a name from supported_targets(), or "best" to lift
// the cap). ValueError naming the choices for anything else. Not for use while other threads
// are inside cvattn kernels.
CVATTN_EXPORT void set_max_target(const std::string& name);

// The matrix-product library behind conv2d, linear and the attention GEMMs: "openblas (openmp)"
// (its kernels chosen for this CPU at run time), "eigen" (fixed at compile time), ...
[[nodiscard]] CVATTN_EXPORT std::string gemm_backend();

}  // namespace cvattn::simd

#pragma once
// Thread count of cvattn's kernels (OpenMP). Defaults to OpenMP's (OMP_NUM_THREADS or all
// cores). Kernels called from inside a user's own parallel region run serially.
#include "cvattn/export.hpp"

namespace cvattn {

// More threads than this are refused: OpenMP runtimes abort or crash while creating them.
inline constexpr int kMaxThreads = 1024;

// ValueError unless 1 <= threads <= kMaxThreads.
CVATTN_EXPORT void set_num_threads(int threads);
[[nodiscard]] CVATTN_EXPORT int num_threads();

}  // namespace cvattn

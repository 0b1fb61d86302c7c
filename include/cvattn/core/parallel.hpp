#pragma once
// Thread count of cvattn's kernels (OpenMP). Defaults to OpenMP's (OMP_NUM_THREADS or all
// cores). Kernels called from inside a user's own parallel region run serially.
#include "cvattn/export.hpp"

namespace cvattn {

CVATTN_EXPORT void set_num_threads(int threads);
[[nodiscard]] CVATTN_EXPORT int num_threads();

}  // namespace cvattn

#pragma once
// The only place, with parallel.cpp, where OpenMP appears. Bodies must not throw: validate and
// allocate before calling.
#include <cstdint>

#if CVATTN_HAS_OPENMP
#include <omp.h>
#endif

namespace cvattn::detail {

// Runs body(i) for i in [0, count), statically split over the threads.
template <class Body>
void parallel_for(std::int64_t count, Body&& body) {
#if CVATTN_HAS_OPENMP
#pragma omp parallel for schedule(static) if (count > 1 && !omp_in_parallel())
#endif
  for (std::int64_t i = 0; i < count; ++i) body(i);
}

// Runs body(begin, end) on contiguous chunks of [0, count), one chunk per thread, for bodies
// that keep per-thread scratch.
template <class Body>
void parallel_chunks(std::int64_t count, Body&& body) {
#if CVATTN_HAS_OPENMP
  if (count > 1 && !omp_in_parallel()) {
#pragma omp parallel
    {
      const std::int64_t t = omp_get_thread_num();
      const std::int64_t nt = omp_get_num_threads();
      const std::int64_t begin = count * t / nt;
      const std::int64_t end = count * (t + 1) / nt;
      if (begin < end) body(begin, end);
    }
    return;
  }
#endif
  if (count > 0) body(std::int64_t{0}, count);
}

// Threads the next parallel region will use.
inline int max_threads() {
#if CVATTN_HAS_OPENMP
  return omp_in_parallel() ? 1 : omp_get_max_threads();
#else
  return 1;
#endif
}

}  // namespace cvattn::detail

#include "cvattn/core/parallel.hpp"

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"

namespace cvattn {

void set_num_threads(int threads) {
  CVATTN_CHECK(threads >= 1 && threads <= kMaxThreads, ValueError,
               "set_num_threads: expected 1 to ", kMaxThreads, " threads, got ", threads);
#if CVATTN_HAS_OPENMP
  omp_set_num_threads(threads);
#endif
}

int num_threads() { return detail::max_threads(); }

}  // namespace cvattn

#include "cvattn/core/parallel.hpp"

#include "cvattn/core/error.hpp"
#include "core/parallel_for.hpp"

namespace cvattn {

void set_num_threads(int threads) {
  CVATTN_CHECK(threads >= 1, ValueError, "set_num_threads: expected at least 1 thread, got ",
               threads);
#if CVATTN_HAS_OPENMP
  omp_set_num_threads(threads);
#endif
}

int num_threads() { return detail::max_threads(); }

}  // namespace cvattn

#pragma once
// Private helpers for splitting kernel work into tasks that own per-thread scratch.
#include <atomic>
#include <cstdint>
#include <exception>

#include "core/parallel_for.hpp"

namespace cvattn::functional::detail {

// Tasks per thread wanted, so that uneven splits cost little.
inline constexpr std::int64_t kTasksPerThread = 4;

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Scratch slots worth allocating for `tasks` tasks: one per thread that will get work.
inline std::int64_t slot_count(std::int64_t tasks) {
  const std::int64_t threads = cvattn::detail::max_threads();
  return tasks < threads ? (tasks > 0 ? tasks : 1) : threads;
}

// Per-slot scratch size rounded up to whole 64-byte lines (plus one), so that slots used by
// different threads never share a cache line.
inline std::int64_t slot_stride(std::int64_t floats) { return (floats + 31) / 16 * 16; }

// Holds the first exception thrown inside a parallel region so that it can be rethrown after
// the region (an exception must not leave an OpenMP region). Bodies validate and allocate up
// front; this only catches what a library call inside may still throw, such as std::bad_alloc
// from Eigen's GEMM blocking buffers.
class ErrorSlot {
 public:
  void capture() noexcept {
    if (!failed_.exchange(true)) first_ = std::current_exception();
  }
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::atomic<bool> failed_{false};
  std::exception_ptr first_;
};

// detail::parallel_for(count, body) that rethrows a body's exception after the region.
template <class Body>
void guarded_parallel_for(std::int64_t count, Body&& body) {
  ErrorSlot error;
  cvattn::detail::parallel_for(count, [&](std::int64_t i) {
    try {
      body(i);
    } catch (...) {
      error.capture();
    }
  });
  error.rethrow();
}

// Runs body(task, slot) for every task in [0, tasks), with slot in [0, slots) unique among
// concurrently running bodies, so a body may use scratch slot `slot`. Exceptions are rethrown
// after the parallel region.
template <class Body>
void for_each_task(std::int64_t tasks, std::int64_t slots, Body&& body) {
  guarded_parallel_for(slots, [&](std::int64_t slot) {
    const std::int64_t begin = tasks * slot / slots;
    const std::int64_t end = tasks * (slot + 1) / slots;
    for (std::int64_t t = begin; t < end; ++t) body(t, slot);
  });
}

// for_each_task, but tasks are handed out one at a time from a shared counter instead of in
// fixed contiguous ranges: when a thread starts late (its core busy with another process) or
// runs slower, the others take over its tasks instead of waiting for it at the end. Only for
// tasks whose result does not depend on which thread, or in which order, runs them.
template <class Body>
void for_each_task_dynamic(std::int64_t tasks, std::int64_t slots, Body&& body) {
  std::atomic<std::int64_t> next{0};
  guarded_parallel_for(slots, [&](std::int64_t slot) {
    for (std::int64_t t = next.fetch_add(1, std::memory_order_relaxed); t < tasks;
         t = next.fetch_add(1, std::memory_order_relaxed)) {
      body(t, slot);
    }
  });
}

}  // namespace cvattn::functional::detail

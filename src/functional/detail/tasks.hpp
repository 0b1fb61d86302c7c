#pragma once
// Private helpers for splitting kernel work into tasks that own per-thread scratch.
#include <cstdint>

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

// Runs body(task, slot) for every task in [0, tasks), with slot in [0, slots) unique among
// concurrently running bodies, so a body may use scratch slot `slot`.
template <class Body>
void for_each_task(std::int64_t tasks, std::int64_t slots, Body&& body) {
  cvattn::detail::parallel_for(slots, [&](std::int64_t slot) {
    const std::int64_t begin = tasks * slot / slots;
    const std::int64_t end = tasks * (slot + 1) / slots;
    for (std::int64_t t = begin; t < end; ++t) body(t, slot);
  });
}

}  // namespace cvattn::functional::detail

#pragma once
// Work split by amount rather than by item: tiny inputs run serially instead of paying for a
// parallel region (which costs more than the work itself when the cores are busy). Private.
#include <algorithm>
#include <cstdint>

#include "functional/detail/tasks.hpp"

namespace cvattn::functional::detail {

// Elements of work worth one parallel task.
inline constexpr std::int64_t kGrainElements = std::int64_t{1} << 15;

// Items per task when each item costs `item_cost` elements of work.
inline std::int64_t items_per_task(std::int64_t item_cost) {
  return std::max<std::int64_t>(1, kGrainElements / std::max<std::int64_t>(1, item_cost));
}

// body(begin, end) over [0, count) in ranges of `per_task` items, in parallel when there are
// several ranges.
template <class Body>
void parallel_ranges(std::int64_t count, std::int64_t per_task, Body&& body) {
  cvattn::detail::parallel_for(ceil_div(count, per_task), [&](std::int64_t t) {
    body(t * per_task, std::min(count, (t + 1) * per_task));
  });
}

}  // namespace cvattn::functional::detail

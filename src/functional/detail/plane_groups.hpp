#pragma once
// Groups of up to four planes for the per-pixel loops of the sampling kernels: a tap is loaded
// and tested once per group, and the loop takes the group size at compile time (with a run-time
// size the per-plane compare and branch stayed in the pixel loop). Private to cvattn.
#include <cstdint>
#include <type_traits>

namespace cvattn::detail {

inline constexpr std::int64_t kPlaneGroup = 4;

// Calls fn(std::integral_constant<int, G>{}) for a group of G = 1..4 planes (4 for larger).
template <class Fn>
inline void with_plane_group(std::int64_t group, Fn&& fn) {
  switch (group) {
    case 1:
      fn(std::integral_constant<int, 1>{});
      break;
    case 2:
      fn(std::integral_constant<int, 2>{});
      break;
    case 3:
      fn(std::integral_constant<int, 3>{});
      break;
    default:
      fn(std::integral_constant<int, 4>{});
      break;
  }
}

}  // namespace cvattn::detail

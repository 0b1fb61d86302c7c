#pragma once
// Runs a parity check once per SIMD target this build and CPU support (cvattn/core/simd.hpp),
// so that every dispatched kernel is compared with its reference twin on each target it can
// take here; a target this CPU cannot run is at least the same source as the ones it can.
#include <gtest/gtest.h>

#include <string>

#include "cvattn/core/simd.hpp"

namespace cvattn::test {

// Calls check() with dispatch capped at each supported target in turn, then lifts the cap.
template <class F>
void for_each_simd_target(F check) {
  const auto targets = cvattn::simd::supported_targets();
  ASSERT_FALSE(targets.empty());
  for (const std::string& target : targets) {
    SCOPED_TRACE("SIMD target " + target);
    cvattn::simd::set_max_target(target);
    EXPECT_EQ(cvattn::simd::current_target(), target);
    check();
  }
  cvattn::simd::set_max_target("best");
}

}  // namespace cvattn::test

#pragma once
// Runs a parity check once per SIMD target this build and CPU support (cvattn/core/simd.hpp),
// so that every dispatched kernel is compared with its reference twin on each target it can
// take here; a target this CPU cannot run is at least the same source as the ones it can.
//
// CVATTN_PARITY_TARGETS=best checks the CPU's best target only: CI's runs under qemu use it, since
// the host has already checked every lower target natively (.ci/check-x86-cpus.sh). Unset or
// "all": every target.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cvattn/core/simd.hpp"

namespace cvattn::test {

// Returns f() computed with dispatch capped at `target`, then restores the target in use before
// (a cap from CVATTN_SIMD holds for the program's later tests).
template <class F>
auto on_simd_target(const std::string& target, F f) {
  const std::string before = cvattn::simd::current_target();
  cvattn::simd::set_max_target(target);
  auto out = f();
  cvattn::simd::set_max_target(before);
  return out;
}

// Calls check() with dispatch capped at each supported target in turn, then restores the target
// in use before (a cap from CVATTN_SIMD holds for the program's later tests).
template <class F>
void for_each_simd_target(F check) {
  const std::string before = cvattn::simd::current_target();
  auto targets = cvattn::simd::supported_targets();
  ASSERT_FALSE(targets.empty());
  const char* env = std::getenv("CVATTN_PARITY_TARGETS");
  const std::string which = env == nullptr ? "all" : env;
  ASSERT_TRUE(which == "all" || which == "best")
      << "CVATTN_PARITY_TARGETS is '" << which << "'; expected 'all' or 'best'";
  if (which == "best") targets.resize(1);
  for (const std::string& target : targets) {
    SCOPED_TRACE("SIMD target " + target);
    cvattn::simd::set_max_target(target);
    EXPECT_EQ(cvattn::simd::current_target(), target);
    check();
  }
  cvattn::simd::set_max_target(before);
}

}  // namespace cvattn::test

#include "cvattn/core/simd.hpp"

#include <hwy/targets.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "core/dispatch.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/gemm.hpp"

namespace cvattn {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Targets as single bits, best (lowest bit) first.
std::vector<std::int64_t> bits(std::int64_t mask) {
  std::vector<std::int64_t> out;
  for (; mask != 0; mask &= mask - 1) out.push_back(mask & ~(mask - 1));
  return out;
}

std::vector<std::string> names(std::int64_t mask) {
  std::vector<std::string> out;
  for (const std::int64_t t : bits(mask)) out.push_back(lower(hwy::TargetName(t)));
  return out;
}

std::int64_t cpu_targets() {
  // SupportedTargets() honours an earlier cap; lift it for the question "what can this CPU run".
  hwy::DisableTargets(0);
  return hwy::SupportedTargets();
}

// hwy::SupportedTargets() outside Highway's own dispatch (Highway 1.0.3) leaves the chosen target
// at the CPU's best, ignoring DisableTargets, until the next DisableTargets: make the next
// HWY_DYNAMIC_DISPATCH choose again (among the targets allowed) after asking it.
std::int64_t allowed_targets() {
  const std::int64_t targets = hwy::SupportedTargets();
  hwy::GetChosenTarget().DeInit();
  return targets;
}

std::int64_t g_cap = 0;  // the bit of the best allowed target; 0: no cap

void apply_cap(std::int64_t cap) {
  g_cap = cap;
  // Every target better than the cap (lower bits) is disabled; Highway re-chooses on next call.
  hwy::DisableTargets(cap == 0 ? 0 : (cap - 1));
}

void set_cap_by_name(const std::string& name, const char* where) {
  const std::string want = lower(name);
  if (want == "best" || want.empty()) {
    apply_cap(0);
    return;
  }
  const std::int64_t supported = cpu_targets() & HWY_TARGETS;
  apply_cap(g_cap);  // cpu_targets() lifted the cap; a name rejected below must leave it as it was
  for (const std::int64_t t : bits(supported)) {
    if (lower(hwy::TargetName(t)) == want) {
      apply_cap(t);
      return;
    }
  }
  std::string choices = "best";
  for (const auto& n : names(supported)) choices += ", " + n;
  throw ValueError(std::string(where) + ": SIMD target '" + name +
                   "' is not one this build and CPU can run (choices: " + choices + ")");
}

std::once_flag g_env_once;

}  // namespace

namespace detail {
std::atomic<bool> g_simd_ready{false};

void simd_init_once() {
  // A bad CVATTN_SIMD throws out of call_once, which then runs again on the next call.
  std::call_once(g_env_once, [] {
    if (const char* env = std::getenv("CVATTN_SIMD")) set_cap_by_name(env, "CVATTN_SIMD");
  });
  g_simd_ready.store(true, std::memory_order_release);
}
}  // namespace detail

namespace simd {

std::vector<std::string> compiled_targets() { return names(HWY_TARGETS); }

std::vector<std::string> supported_targets() {
  detail::simd_init();
  const std::int64_t cap = g_cap;
  const std::int64_t mask = cpu_targets() & HWY_TARGETS;
  apply_cap(cap);
  return names(mask);
}

std::string current_target() {
  detail::simd_init();
  const std::int64_t best = allowed_targets() & HWY_TARGETS;
  return best == 0 ? "none" : lower(hwy::TargetName(best & ~(best - 1)));
}

void set_max_target(const std::string& name) {
  detail::simd_init();
  set_cap_by_name(name, "simd::set_max_target");
}

std::string gemm_backend() { return detail::gemm_backend(); }

}  // namespace simd
}  // namespace cvattn

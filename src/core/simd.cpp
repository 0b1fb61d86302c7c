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

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

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

// The targets this CPU can run, detected once before any kernel (simd_init_once); 0 until then.
std::int64_t g_cpu = 0;
std::int64_t g_cap = 0;  // the bit of the best allowed target; 0: no cap

// Highway 1.0.3 chooses a target lazily: the first HWY_DYNAMIC_DISPATCH after a change calls
// SupportedTargets(), which for a moment sets the chosen target to the CPU's best, ignoring
// DisableTargets, before narrowing it to the allowed ones. Two threads making that first call
// together could run different targets: SDPA's scratch sized by one target and used by another
// overflowed under ASan (docs/reliability.md). So the choice is made here, on the calling thread,
// whenever it changes; kernels always find it made and never take Highway's lazy path, and
// nothing below touches Highway's state outside simd_init_once and set_max_target.
void apply_cap(std::int64_t cap) {
  g_cap = cap;
  // Every target better than the cap (lower bits) is disabled.
  hwy::DisableTargets(cap == 0 ? 0 : (cap - 1));
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

// The compiled targets the CPU can run and the cap allows, best (lowest bit) first.
std::int64_t allowed_targets() {
  const std::int64_t mask = g_cpu & HWY_TARGETS;
  return g_cap == 0 ? mask : mask & ~(g_cap - 1);
}

void set_cap_by_name(const std::string& name, const char* where) {
  const std::string want = lower(name);
  if (want == "best" || want.empty()) {
    apply_cap(0);
    return;
  }
  const std::int64_t supported = g_cpu & HWY_TARGETS;
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
namespace {
bool cpu_prefetchw() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(0x80000001u, &a, &b, &c, &d) != 0 && (c & (1u << 8)) != 0;
#else
  return false;
#endif
}
}  // namespace
const bool g_cpu_prefetchw = cpu_prefetchw();

std::atomic<bool> g_simd_ready{false};

void simd_init_once() {
  // A bad CVATTN_SIMD throws out of call_once, which then runs again on the next call.
  std::call_once(g_env_once, [] {
    hwy::DisableTargets(0);
    g_cpu = hwy::SupportedTargets();
    const char* env = std::getenv("CVATTN_SIMD");
    set_cap_by_name(env != nullptr ? env : "best", "CVATTN_SIMD");
  });
  g_simd_ready.store(true, std::memory_order_release);
}
}  // namespace detail

namespace simd {

std::vector<std::string> compiled_targets() { return names(HWY_TARGETS); }

std::vector<std::string> supported_targets() {
  detail::simd_init();
  return names(g_cpu & HWY_TARGETS);
}

std::string current_target() {
  detail::simd_init();
  const std::int64_t allowed = allowed_targets();
  return allowed == 0 ? "none" : lower(hwy::TargetName(allowed & ~(allowed - 1)));
}

void set_max_target(const std::string& name) {
  detail::simd_init();
  set_cap_by_name(name, "simd::set_max_target");
}

std::string gemm_backend() { return detail::gemm_backend(); }

}  // namespace simd
}  // namespace cvattn

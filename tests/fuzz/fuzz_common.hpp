#pragma once
// Shared by every libFuzzer harness: the only acceptable outcomes of an input are success or a
// cvattn::Error. Any other exception aborts, which libFuzzer (and the replay driver) report as
// a crash, like the sanitizers' findings.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"

namespace cvattn::fuzz {

// Keeps every allocation far below libFuzzer's -rss_limit_mb, so that a size claim that gets
// past validation shows up as a ValueError here rather than as an out-of-memory report. 1 MiB
// also bounds the work of an op the harnesses run: the fuzz build's kernels are -O0 EMU128 under
// ASan, and a depthwise conv2d padded to a 16 MiB output took 14 s, past the 10 s timeout.
inline void init_limits() { set_max_tensor_bytes(std::int64_t{1} << 20); }

template <class Body>
int guarded(Body&& body) {
  try {
    body();
  } catch (const cvattn::Error&) {
    // A diagnosed bad input: the expected outcome for most fuzz inputs.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: escaped non-cvattn exception %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: escaped an exception of unknown type\n");
    std::abort();
  }
  return 0;
}

// A broken invariant of a successful result.
#define CVATTN_FUZZ_ASSERT(cond)                                                              \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "fuzz: %s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)

}  // namespace cvattn::fuzz

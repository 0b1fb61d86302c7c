// Runtime dispatch of the SDPA engine (sdpa_kernel.hpp): the work split over threads is here, the
// per-target tiles are in sdpa_kernel-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/sdpa_kernel-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/sdpa_kernel-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cstdint>

#include "core/dispatch.hpp"
#include "core/parallel_for.hpp"
#include "cvattn/core/tensor.hpp"
#include "functional/detail/sdpa_kernel.hpp"
#include "functional/detail/softmax.hpp"

namespace cvattn::detail {

HWY_EXPORT(SdpaScratchSize);
HWY_EXPORT(SdpaRunBlock);

namespace {

constexpr std::int64_t kBlockTarget = 48;
constexpr std::int64_t kAveragedBlockTarget = 128;
// The register tiles' height (sdpa_kernel-inl.h), the same on every target.
constexpr std::int64_t kBlockMultiple = 6;

std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

// Query rows per task, balanced so the last block is not a sliver.
std::int64_t block_rows(std::int64_t L, std::int64_t target, std::int64_t multiple) {
  const std::int64_t blocks = (L + target - 1) / target;
  return round_up((L + blocks - 1) / blocks, multiple);
}

}  // namespace

void run_sdpa(const SdpaPlan& p) {
  if (p.heads == 0 || p.L == 0) return;
  if (p.S == 0) {  // nothing to attend: zero output (weights are empty)
    for (std::int64_t h = 0; h < p.heads; ++h) {
      for (std::int64_t i = 0; i < p.L; ++i) zero_row(p.out + p.out_off[h] + i * p.out_rs, p.Ev);
    }
    return;
  }
  // One target for the whole call: the scratch layout depends on its vector width.
  const auto scratch_size = CVATTN_DISPATCH(SdpaScratchSize);
  const auto run_block = CVATTN_DISPATCH(SdpaRunBlock);
  // With a head-averaged map, a task runs all heads of a group on its rows (in order, the first
  // starting the sum), so no two threads add to the same rows. Each head is then packed once per
  // block, hence larger blocks; not sized by the thread count, which must not change results.
  const std::int64_t group = p.weights_avg ? p.avg_group : 1;
  const std::int64_t units = p.heads / group;
  const std::int64_t block =
      block_rows(p.L, group > 1 ? kAveragedBlockTarget : kBlockTarget, kBlockMultiple);
  const std::int64_t nblocks = (p.L + block - 1) / block;
  const std::int64_t tasks = units * nblocks;
  const std::int64_t threads =
      std::max<std::int64_t>(1, std::min<std::int64_t>(max_threads(), tasks));
  const std::int64_t per_thread = scratch_size(p, block);
  Tensor scratch = Tensor::empty({threads, per_thread});
  float* const scratch_data = scratch.data();
  // Each thread takes a contiguous range of (head group, block) tasks, so a head's packed K/V
  // are reused by all of its blocks on that thread.
  parallel_for(threads, [&](std::int64_t t) {
    const std::int64_t begin = tasks * t / threads, end = tasks * (t + 1) / threads;
    std::int64_t packed = -1;
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t r0 = (task % nblocks) * block;
      for (std::int64_t h = task / nblocks * group; h < (task / nblocks + 1) * group; ++h) {
        run_block(p, h, r0, std::min(block, p.L - r0), block, scratch_data + t * per_thread,
                  h != packed);
        packed = h;
      }
    }
  });
}

}  // namespace cvattn::detail
#endif

// Per-target bodies of selective_kernel.cpp, compiled once for every Highway target (Highway's
// toggle instead of a plain include guard).
#if defined(CVATTN_FUNCTIONAL_SELECTIVE_KERNEL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_SELECTIVE_KERNEL_INL_H_
#undef CVATTN_FUNCTIONAL_SELECTIVE_KERNEL_INL_H_
#else
#define CVATTN_FUNCTIONAL_SELECTIVE_KERNEL_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

#include "functional/detail/reduce.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// sum over i < hw of sum_p relu(f[p][offset + i]), the paths added first in path order (as
// PyTorch's sum of the paths before the spatial mean); float lanes per block of kReduceBlock
// elements, double across blocks. relu keeps NaN (v <= 0 is false for NaN).
inline double ReluPathSum(const float* const* f, std::int64_t offset, std::int64_t paths,
                          std::int64_t hw) {
  const hn::ScalableTag<float> d;
  const std::int64_t lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto zero = hn::Zero(d);
  auto relu = [&](decltype(zero) v) { return hn::IfThenZeroElse(hn::Le(v, zero), v); };
  const std::int64_t group = 2 * lanes;
  const std::int64_t vec_end = hw - hw % group;
  double total = 0.0;
  std::int64_t i = 0;
  while (i < vec_end) {
    const std::int64_t block_end = std::min(vec_end, i + kReduceBlock);
    auto s0 = zero, s1 = zero;
    for (; i < block_end; i += group) {
      const float* f0 = f[0] + offset + i;
      auto t0 = relu(hn::LoadU(d, f0));
      auto t1 = relu(hn::LoadU(d, f0 + lanes));
      for (std::int64_t p = 1; p < paths; ++p) {
        const float* fp = f[p] + offset + i;
        t0 = hn::Add(t0, relu(hn::LoadU(d, fp)));
        t1 = hn::Add(t1, relu(hn::LoadU(d, fp + lanes)));
      }
      s0 = hn::Add(s0, t0);
      s1 = hn::Add(s1, t1);
    }
    total += static_cast<double>(hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1))));
  }
  for (; i < hw; ++i) {
    auto r = [](float v) { return v <= 0.0f ? 0.0f : v; };
    float t = r(f[0][offset + i]);
    for (std::int64_t p = 1; p < paths; ++p) t += r(f[p][offset + i]);
    total += static_cast<double>(t);
  }
  return total;
}

// select_paths: a vector of pixels over every path at a time, Mul then Add (never MulAdd) so that
// each product is rounded as in PyTorch; the tail through a zero-padded vector, same arithmetic.
inline void SelectPaths(const float* const* f, std::int64_t offset, const float* w,
                        std::int64_t w_stride, std::int64_t paths, std::int64_t hw, float* y) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto zero = hn::Zero(d);
  const auto relu = [&](V v) { return hn::IfThenZeroElse(hn::Le(v, zero), v); };
  const auto weighted = [&](std::int64_t i, auto load) {
    V acc = hn::Mul(hn::Set(d, w[0]), relu(load(f[0] + offset + i)));
    for (std::int64_t p = 1; p < paths; ++p) {
      acc = hn::Add(acc, hn::Mul(hn::Set(d, w[p * w_stride]), relu(load(f[p] + offset + i))));
    }
    return acc;
  };
  std::int64_t i = 0;
  for (; i + lanes <= hw; i += lanes) {
    hn::StoreU(weighted(i, [&](const float* s) { return hn::LoadU(d, s); }), d, y + i);
  }
  if (i < hw) {
    const std::int64_t n = hw - i;
    HWY_ALIGN float part[HWY_MAX_BYTES / sizeof(float)] = {};
    const V v = weighted(i, [&](const float* s) {
      std::copy(s, s + n, part);
      return hn::Load(d, part);
    });
    hn::Store(v, d, part);
    std::copy(part, part + n, y + i);
  }
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle

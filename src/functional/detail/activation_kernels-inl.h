// Per-target bodies of functional/detail/activation_kernels.hpp, compiled once for every Highway
// target by activation_kernels.cpp (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_ACTIVATION_KERNELS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_ACTIVATION_KERNELS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_ACTIVATION_KERNELS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_ACTIVATION_KERNELS_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "functional/detail/activation_apply-inl.h"
#include "functional/detail/activation_kernels.hpp"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The loop for one activation (the switch in Apply folds away), two vectors per step.
template <ActLayer kAct>
void ActivationLoop(const float* HWY_RESTRICT x, float* y, std::int64_t n) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  std::int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const auto a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + lanes);
    hn::StoreU(Apply<kAct>(d, a), d, y + i);
    hn::StoreU(Apply<kAct>(d, b), d, y + i + lanes);
  }
  for (; i + lanes <= n; i += lanes) hn::StoreU(Apply<kAct>(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {  // the tail through one padded vector, so every element sees the same arithmetic
    HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
    const auto rest = static_cast<std::size_t>(n - i);
    std::memcpy(buf, x + i, rest * sizeof(float));
    hn::Store(Apply<kAct>(d, hn::Load(d, buf)), d, buf);
    std::memcpy(y + i, buf, rest * sizeof(float));
  }
}

void ActivationKernel(ActLayer act, const float* HWY_RESTRICT x, float* y, std::int64_t n) {
  switch (act) {
    case ActLayer::identity:
      return ActivationLoop<ActLayer::identity>(x, y, n);
    case ActLayer::relu:
      return ActivationLoop<ActLayer::relu>(x, y, n);
    case ActLayer::relu6:
      return ActivationLoop<ActLayer::relu6>(x, y, n);
    case ActLayer::hard_swish:
      return ActivationLoop<ActLayer::hard_swish>(x, y, n);
    case ActLayer::hard_sigmoid:
      return ActivationLoop<ActLayer::hard_sigmoid>(x, y, n);
    case ActLayer::sigmoid:
      return ActivationLoop<ActLayer::sigmoid>(x, y, n);
    case ActLayer::silu:
      return ActivationLoop<ActLayer::silu>(x, y, n);
    case ActLayer::tanh:
      return ActivationLoop<ActLayer::tanh>(x, y, n);
    case ActLayer::gelu:
      return ActivationLoop<ActLayer::gelu>(x, y, n);
    case ActLayer::gelu_tanh:
      return ActivationLoop<ActLayer::gelu_tanh>(x, y, n);
    case ActLayer::mish:
      return ActivationLoop<ActLayer::mish>(x, y, n);
  }
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif

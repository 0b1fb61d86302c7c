// Runtime dispatch of the elementwise activations (activation_kernels.hpp); the bodies are in
// activation_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/activation_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/activation_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::detail {

HWY_EXPORT(ActivationKernel);

void activation_kernel(ActLayer act, const float* x, float* y, std::int64_t n) {
  CVATTN_DISPATCH(ActivationKernel)(act, x, y, n);
}

}  // namespace cvattn::detail
#endif

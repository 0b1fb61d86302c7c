// Runtime dispatch of the Winograd F(4x4, 3x3) transforms (winograd_kernels.hpp); bodies in
// winograd_kernels-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/winograd_kernels-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/winograd_kernels-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"

namespace cvattn::functional::detail {

HWY_EXPORT(Winograd43Input);
HWY_EXPORT(Winograd43Output);
HWY_EXPORT(WinogradCopyRows);
HWY_EXPORT(Winograd43Weights);

void winograd43_input(const float* const* rows, std::int64_t tw, float* t, float* v,
                      std::int64_t step) {
  CVATTN_DISPATCH(Winograd43Input)(rows, tw, t, v, step);
}

void winograd43_output(const float* m, std::int64_t step, std::int64_t tw, float bias, float* out,
                       std::int64_t ld, std::int64_t rows, std::int64_t wo) {
  CVATTN_DISPATCH(Winograd43Output)(m, step, tw, bias, out, ld, rows, wo);
}

float winograd_copy_rows(const float* src, std::int64_t src_ld, std::int64_t rows,
                         std::int64_t cols, float* dst, std::int64_t dst_ld) {
  return CVATTN_DISPATCH(WinogradCopyRows)(src, src_ld, rows, cols, dst, dst_ld);
}

void winograd43_weights_rows(const float* k, std::int64_t count, float* u, std::int64_t plane) {
  CVATTN_DISPATCH(Winograd43Weights)(k, count, u, plane);
}

}  // namespace cvattn::functional::detail
#endif

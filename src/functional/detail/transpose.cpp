// Runtime dispatch of the matrix transpose (transpose.hpp); the bodies are in transpose-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/detail/transpose-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/detail/transpose-inl.h"

#if HWY_ONCE
#include "core/dispatch.hpp"
#include "functional/detail/transpose.hpp"

namespace cvattn::detail {

HWY_EXPORT(Transpose);

void transpose(const float* src, float* dst, std::int64_t rows, std::int64_t cols) {
  CVATTN_DISPATCH(Transpose)(src, dst, rows, cols);
}

}  // namespace cvattn::detail
#endif

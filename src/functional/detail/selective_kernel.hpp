#pragma once
// The dispatched kernel of selective_kernel_attention (functional/selective_kernel.cpp, bodies in
// selective_kernel-inl.h; reference twin functional/reference/selective_kernel.hpp). Private.
#include <cstdint>

namespace cvattn::detail {

// sum over i < hw of sum_p relu(f[p][offset + i]) (relu keeps NaN), the paths added first, in
// float lanes per block of kReduceBlock elements and double across blocks.
[[nodiscard]] double relu_path_sum(const float* const* f, std::int64_t offset, std::int64_t paths,
                                   std::int64_t hw);

}  // namespace cvattn::detail

#pragma once
// The dispatched kernels of selective_kernel_attention (functional/selective_kernel.cpp, bodies in
// selective_kernel-inl.h; reference twin functional/reference/selective_kernel.hpp). Private.
#include <cstdint>

namespace cvattn::detail {

// sum over i < hw of sum_p relu(f[p][offset + i]) (relu keeps NaN), the paths added first, in
// float lanes per block of kReduceBlock elements and double across blocks.
[[nodiscard]] double relu_path_sum(const float* const* f, std::int64_t offset, std::int64_t paths,
                                   std::int64_t hw);

// y[i] = sum_p w[p * w_stride] * relu(f[p][offset + i]) for i < hw: each product rounded, then
// added in path order (PyTorch's x * attn summed over the paths), the same bits on every target.
// y may be f[0] + offset (the first path overwritten), not otherwise overlap the paths.
void select_paths(const float* const* f, std::int64_t offset, const float* w, std::int64_t w_stride,
                  std::int64_t paths, std::int64_t hw, float* y);

}  // namespace cvattn::detail

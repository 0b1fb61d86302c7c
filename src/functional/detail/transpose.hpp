#pragma once
// Matrix transposes for the attention kernels (token <-> channel layouts). Private to cvattn.
// Dispatched at run time to the best SIMD target (transpose-inl.h, whose register blocks the SDPA
// key packing also uses); the reference twin is functional/reference/transpose.hpp.
#include <cstdint>

namespace cvattn::detail {

// dst [cols, rows] (row stride rows) = src [rows, cols]^T, in register blocks, so both the reads
// and the writes stay sequential within a block. src and dst must not overlap.
void transpose(const float* src, float* dst, std::int64_t rows, std::int64_t cols);

}  // namespace cvattn::detail

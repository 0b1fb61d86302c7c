#pragma once
// NumPy-style broadcasting of leading (batch) dims, for kernels that loop over a flat batch
// index and need each operand's offset. Private to cvattn.
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "cvattn/core/tensor.hpp"

namespace cvattn::detail {

// Broadcast shape of `shapes` (right-aligned; each dim equal or 1). False if they conflict.
inline bool broadcast_shapes(std::initializer_list<Shape> shapes, Shape& out) {
  std::size_t rank = 0;
  for (const auto& s : shapes) rank = s.size() > rank ? s.size() : rank;
  out.assign(rank, 1);
  for (const auto& s : shapes) {
    const std::size_t pad = rank - s.size();
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::int64_t d = s[i];
      std::int64_t& o = out[pad + i];
      if (d == o || d == 1) continue;
      if (o != 1) return false;
      o = d;
    }
  }
  return true;
}

// True if `from` broadcasts to `to` (rank(from) <= rank(to), each dim equal or 1).
inline bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const std::size_t pad = to.size() - from.size();
  for (std::size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[pad + i]) return false;
  }
  return true;
}

// For every flat index of `out` (a batch shape), the offset of the matching matrix in a
// contiguous tensor whose batch dims are `dims` (right-aligned, size-1 dims repeat) and whose
// matrices hold `block` elements each.
inline std::vector<std::int64_t> batch_offsets(const Shape& dims, const Shape& out,
                                               std::int64_t block) {
  std::int64_t count = 1;
  for (const auto d : out) count *= d;
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(count), 0);
  const std::size_t pad = out.size() - dims.size();
  std::vector<std::int64_t> stride(dims.size(), 0);
  std::int64_t s = block;
  for (std::size_t i = dims.size(); i-- > 0;) {
    stride[i] = dims[i] == 1 ? 0 : s;
    s *= dims[i];
  }
  for (std::int64_t flat = 0; flat < count; ++flat) {
    std::int64_t rest = flat, off = 0;
    for (std::size_t i = out.size(); i-- > pad;) {
      const std::int64_t idx = rest % out[i];
      rest /= out[i];
      off += idx * stride[i - pad];
    }
    offsets[static_cast<std::size_t>(flat)] = off;
  }
  return offsets;
}

}  // namespace cvattn::detail

#pragma once
// Row slices of attention maps, as the fixture scripts store them when the whole map is
// megabytes (tests/fixtures/models_byob.py's map_rows).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "cvattn/core/tensor.hpp"

namespace cvattn::test {

// The rows `rows` of the second-to-last axis of `map` (rank >= 2), other axes whole.
inline Tensor rows_of_map(const Tensor& map, const std::vector<std::int64_t>& rows) {
  const std::size_t rank = map.shape().size();
  const std::int64_t q = map.shape()[rank - 2];
  const std::int64_t t = map.shape()[rank - 1];
  const std::int64_t outer = map.numel() / (q * t);
  const auto r = static_cast<std::int64_t>(rows.size());
  Shape shape = map.shape();
  shape[rank - 2] = r;
  Tensor out = Tensor::empty(shape);
  for (std::int64_t i = 0; i < outer; ++i) {
    for (std::int64_t k = 0; k < r; ++k) {
      std::copy_n(map.data() + (i * q + rows[static_cast<std::size_t>(k)]) * t, t,
                  out.data() + (i * r + k) * t);
    }
  }
  return out;
}

}  // namespace cvattn::test

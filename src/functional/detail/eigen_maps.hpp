#pragma once
// Eigen views over row-major float buffers for the attention kernels. Private to cvattn (Eigen
// never appears in a public header).
#include <Eigen/Core>
#include <cstdint>

#include "functional/detail/gemm.hpp"

namespace cvattn::detail::attn {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;
using MutMap = Eigen::Map<RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;

inline ConstMap cmap(const float* data, std::int64_t rows, std::int64_t cols) {
  return ConstMap(data, rows, cols, Eigen::OuterStride<>(cols));
}
inline ConstMap cmap(const float* data, std::int64_t rows, std::int64_t cols, std::int64_t stride) {
  return ConstMap(data, rows, cols, Eigen::OuterStride<>(stride));
}
inline MutMap mmap(float* data, std::int64_t rows, std::int64_t cols) {
  return MutMap(data, rows, cols, Eigen::OuterStride<>(cols));
}
inline MutMap mmap(float* data, std::int64_t rows, std::int64_t cols, std::int64_t stride) {
  return MutMap(data, rows, cols, Eigen::OuterStride<>(stride));
}

// out = op(a) * op(b) (ta / tb: the transpose of a / b) by detail::sgemm: OpenBLAS chooses its
// kernels for the CPU at run time, while an Eigen product's are fixed when cvattn is compiled
// (SSE2 in the portable build; docs/performance.md, "Every row").
inline void product(MutMap out, const ConstMap& a, const ConstMap& b, bool ta = false,
                    bool tb = false) {
  sgemm(ta ? Trans::yes : Trans::no, tb ? Trans::yes : Trans::no, out.rows(), out.cols(),
        ta ? a.rows() : a.cols(), 1.0f, a.data(), a.outerStride(), b.data(), b.outerStride(), 0.0f,
        out.data(), out.outerStride());
}

}  // namespace cvattn::detail::attn

#pragma once
// Eigen views over row-major float buffers for the attention kernels. Private to cvattn (Eigen
// never appears in a public header).
#include <Eigen/Core>
#include <cstdint>

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

}  // namespace cvattn::detail::attn

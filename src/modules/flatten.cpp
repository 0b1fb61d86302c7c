#include "cvattn/modules/flatten.hpp"

#include "cvattn/core/error.hpp"

namespace cvattn {

Flatten::Flatten(int start_dim, int end_dim) : start_dim_(start_dim), end_dim_(end_dim) {}

Tensor Flatten::forward(const Tensor& x) const {
  check_defined(x, "x", "Flatten::forward");
  const int rank = x.rank();
  if (rank == 0) return x.reshape({1}).clone();  // as torch.flatten on a scalar
  const int start = start_dim_ < 0 ? start_dim_ + rank : start_dim_;
  const int end = end_dim_ < 0 ? end_dim_ + rank : end_dim_;
  CVATTN_CHECK(0 <= start && start < rank && 0 <= end && end < rank, ValueError,
               "Flatten::forward: start_dim ", start_dim_, " and end_dim ", end_dim_,
               " out of range for tensor 'x' ", to_string(x.shape()));
  CVATTN_CHECK(start <= end, ValueError, "Flatten::forward: start_dim ", start_dim_,
               " comes after end_dim ", end_dim_, " for tensor 'x' ", to_string(x.shape()));
  Shape shape(x.shape().begin(), x.shape().begin() + start);
  std::int64_t merged = 1;
  for (int i = start; i <= end; ++i) merged *= x.shape()[static_cast<std::size_t>(i)];
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + end + 1, x.shape().end());
  return x.reshape(shape).clone();
}

std::string Flatten::describe() const {
  return "Flatten(start_dim=" + std::to_string(start_dim_) +
         ", end_dim=" + std::to_string(end_dim_) + ")";
}

}  // namespace cvattn

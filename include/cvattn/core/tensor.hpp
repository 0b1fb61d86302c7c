#pragma once
// cvattn::Tensor: dense float32, rank 0..6, row-major, over reference-counted storage.
//
// Copies share storage (like cv::Mat and torch::Tensor); clone() deep-copies. The storage is
// an OpenCV buffer, so a continuous N-d CV_32F cv::Mat (what cv::dnn::blobFromImage returns) is
// adopted without copying and to_mat() hands back a header that keeps the storage alive.
#include <cstdint>
#include <initializer_list>
#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

#include "cvattn/export.hpp"

namespace cvattn {

using Shape = std::vector<std::int64_t>;

// "[2, 3, 32, 32]"
CVATTN_EXPORT std::string to_string(const Shape& shape);

// Number of elements of a shape; ShapeError on a negative dimension, ValueError when the
// product overflows or exceeds the allocation cap.
CVATTN_EXPORT std::int64_t checked_numel(const Shape& shape, const std::string& what = "tensor");

// The cap on the size of any tensor cvattn allocates (default 4 GiB). Allocations beyond it
// throw ValueError before any memory is requested; tensors are also limited to 2^31-1 elements.
CVATTN_EXPORT void set_max_tensor_bytes(std::int64_t bytes);
[[nodiscard]] CVATTN_EXPORT std::int64_t max_tensor_bytes();

// Tensor storage of 64 KiB and more is kept when released and reused by the next tensor of
// about the same size, so that a network's repeated forward does not fault its feature maps in
// from the kernel on every call. At most this many bytes are kept (default 256 MiB; 0 under
// AddressSanitizer); 0 disables the cache and frees what it holds. Process-wide, thread-safe.
CVATTN_EXPORT void set_tensor_cache_bytes(std::int64_t bytes);
[[nodiscard]] CVATTN_EXPORT std::int64_t tensor_cache_bytes();
// Bytes currently kept by that cache (for tests and memory accounting).
[[nodiscard]] CVATTN_EXPORT std::int64_t tensor_cache_kept_bytes();

class CVATTN_EXPORT Tensor {
 public:
  static constexpr int kMaxRank = 6;

  Tensor() = default;  // undefined: defined() is false, numel() is 0

  // Adopts a continuous CV_32F cv::Mat without copying. An N-d Mat keeps its dims (a blob from
  // cv::dnn::blobFromImage becomes [N,C,H,W]); a 2-D single-channel Mat becomes [rows, cols]; a
  // 2-D multi-channel Mat becomes [rows, cols, channels]. Anything else throws ShapeError.
  explicit Tensor(const cv::Mat& mat);

  // Uninitialised, zero-filled, constant-filled, or copied from memory.
  [[nodiscard]] static Tensor empty(const Shape& shape);
  [[nodiscard]] static Tensor zeros(const Shape& shape);
  [[nodiscard]] static Tensor full(const Shape& shape, float value);
  [[nodiscard]] static Tensor from_data(const Shape& shape, const float* data);
  [[nodiscard]] static Tensor from_vector(const Shape& shape, const std::vector<float>& values);

  [[nodiscard]] bool defined() const noexcept { return !storage_.empty() || !shape_.empty(); }
  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  [[nodiscard]] int rank() const noexcept { return static_cast<int>(shape_.size()); }
  // Size of dimension i; negative i counts from the end. ShapeError when out of range.
  [[nodiscard]] std::int64_t dim(int i) const;
  [[nodiscard]] std::int64_t numel() const noexcept { return numel_; }
  [[nodiscard]] std::int64_t nbytes() const noexcept { return numel_ * 4; }

  [[nodiscard]] float* data() noexcept { return ptr_; }
  [[nodiscard]] const float* data() const noexcept { return ptr_; }
  // Element by flat index, and by NCHW index (rank 4 only; bounds are the caller's business).
  float& operator[](std::int64_t i) noexcept { return ptr_[i]; }
  float operator[](std::int64_t i) const noexcept { return ptr_[i]; }
  [[nodiscard]] float at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return ptr_[((n * shape_[1] + c) * shape_[2] + h) * shape_[3] + w];
  }

  // Same storage, new shape (one dimension may be -1). ShapeError if the counts differ.
  [[nodiscard]] Tensor reshape(const Shape& shape) const;
  // Sub-tensor [begin, end) along dimension 0, sharing storage.
  [[nodiscard]] Tensor slice0(std::int64_t begin, std::int64_t end) const;
  // Entry i of dimension 0 with that dimension removed, sharing storage.
  [[nodiscard]] Tensor select0(std::int64_t i) const;
  [[nodiscard]] Tensor clone() const;
  // Copies values from src (same number of elements) into this tensor's storage.
  void copy_from(const Tensor& src);
  void fill(float value);

  // True if every element is finite.
  [[nodiscard]] bool all_finite() const;

  // N-d CV_32F header over the same storage (the returned Mat keeps the storage alive).
  [[nodiscard]] cv::Mat to_mat() const;
  // 2-D CV_32F header of plane (n, c) of a rank-4 tensor, sharing storage.
  [[nodiscard]] cv::Mat plane(std::int64_t n, std::int64_t c) const;

  // [N, C, H, W] of a rank-4 tensor; ShapeError otherwise.
  struct Nchw {
    std::int64_t n, c, h, w;
  };
  [[nodiscard]] Nchw nchw(const char* name = "tensor") const;

 private:
  Tensor(cv::Mat storage, Shape shape);

  cv::Mat storage_;  // 1 x numel CV_32F, continuous, refcounted by OpenCV
  Shape shape_;
  float* ptr_ = nullptr;
  std::int64_t numel_ = 0;
};

// Shape checks used at every public entry. kAny matches any size.
inline constexpr std::int64_t kAny = -1;
// Throws ShapeError "<where>: tensor '<name>' expected shape [..], got [..]".
CVATTN_EXPORT void check_shape(const Tensor& t, const Shape& expected, const char* name,
                               const char* where);
CVATTN_EXPORT void check_rank(const Tensor& t, int rank, const char* name, const char* where);
CVATTN_EXPORT void check_defined(const Tensor& t, const char* name, const char* where);

}  // namespace cvattn

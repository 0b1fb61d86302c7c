#include "cvattn/core/tensor.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <sstream>

#include "core/tensor_cache.hpp"
#include "cvattn/core/error.hpp"

namespace cvattn {
namespace {

std::atomic<std::int64_t> g_max_tensor_bytes{std::int64_t{4} << 30};

cv::Mat allocate(std::int64_t numel) {
  // cv::fastMalloc aligns to CV_MALLOC_ALIGN (64 bytes); a zero-size Tensor still gets a
  // one-element buffer so that data() is never null for a defined tensor.
  // The storage comes from the tensor cache (core/tensor_cache.hpp).
  cv::Mat m;
  m.allocator = detail::tensor_allocator();
  m.create(1, static_cast<int>(std::max<std::int64_t>(numel, 1)), CV_32F);
  return m;
}

}  // namespace

std::string to_string(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out << ", ";
    if (shape[i] == kAny) {
      out << '*';
    } else {
      out << shape[i];
    }
  }
  out << ']';
  return out.str();
}

void set_max_tensor_bytes(std::int64_t bytes) {
  CVATTN_CHECK(bytes > 0, ValueError, "set_max_tensor_bytes: cap must be positive, got ", bytes);
  g_max_tensor_bytes.store(bytes);
}

std::int64_t max_tensor_bytes() { return g_max_tensor_bytes.load(); }

std::int64_t checked_numel(const Shape& shape, const std::string& what) {
  CVATTN_CHECK(shape.size() <= static_cast<std::size_t>(Tensor::kMaxRank), ShapeError, what,
               ": rank ", shape.size(), " exceeds the maximum of ", Tensor::kMaxRank, " (shape ",
               to_string(shape), ")");
  std::int64_t n = 1;
  for (const std::int64_t d : shape) {
    CVATTN_CHECK(d >= 0, ShapeError, what, ": negative dimension in shape ", to_string(shape));
    if (d != 0 && n > INT64_MAX / d) {
      throw ValueError(detail::concat(what, ": shape ", to_string(shape),
                                      " has more elements than fit in 64 bits"));
    }
    n *= d;
  }
  const std::int64_t cap = max_tensor_bytes();
  if (n > cap / 4) {
    // n * 4 itself may overflow (found by fuzz_npy): say so instead of computing it.
    const std::string bytes =
        n <= INT64_MAX / 4 ? std::to_string(n * 4) : "more than " + std::to_string(INT64_MAX);
    throw ValueError(detail::concat(what, ": shape ", to_string(shape), " needs ", bytes,
                                    " bytes, over the allocation cap of ", cap,
                                    " bytes (cvattn::set_max_tensor_bytes)"));
  }
  CVATTN_CHECK(n <= INT_MAX, ValueError, what, ": shape ", to_string(shape), " has ", n,
               " elements; at most ", INT_MAX, " are supported");
  return n;
}

Tensor::Tensor(cv::Mat storage, Shape shape)
    : storage_(std::move(storage)), shape_(std::move(shape)) {
  numel_ = 1;
  for (const auto d : shape_) numel_ *= d;
  ptr_ = storage_.ptr<float>();
}

Tensor::Tensor(const cv::Mat& mat) {
  CVATTN_CHECK(!mat.empty(), ShapeError, "Tensor(cv::Mat): the Mat is empty");
  CVATTN_CHECK(mat.depth() == CV_32F, ShapeError,
               "Tensor(cv::Mat): expected a CV_32F Mat, got depth ", mat.depth(),
               " (convert with Mat::convertTo or use from_image)");
  CVATTN_CHECK(mat.isContinuous(), ShapeError,
               "Tensor(cv::Mat): the Mat is not continuous (clone() it first)");
  Shape shape;
  for (int i = 0; i < mat.dims; ++i) shape.push_back(mat.size[i]);
  if (mat.channels() > 1) shape.push_back(mat.channels());
  const std::int64_t n = checked_numel(shape, "Tensor(cv::Mat)");
  // A 1 x numel header over the same data that shares the Mat's reference count.
  const int sizes[2] = {1, static_cast<int>(n)};
  cv::Mat flat = mat.reshape(1, 2, sizes);
  *this = Tensor(std::move(flat), std::move(shape));
}

Tensor Tensor::empty(const Shape& shape) {
  const std::int64_t n = checked_numel(shape);
  return Tensor(allocate(n), shape);
}

Tensor Tensor::zeros(const Shape& shape) { return full(shape, 0.0f); }

Tensor Tensor::full(const Shape& shape, float value) {
  Tensor t = empty(shape);
  t.fill(value);
  return t;
}

Tensor Tensor::from_data(const Shape& shape, const float* data) {
  Tensor t = empty(shape);
  if (t.numel_ > 0) std::memcpy(t.ptr_, data, static_cast<std::size_t>(t.numel_) * 4);
  return t;
}

Tensor Tensor::from_vector(const Shape& shape, const std::vector<float>& values) {
  const std::int64_t n = checked_numel(shape);
  CVATTN_CHECK(static_cast<std::int64_t>(values.size()) == n, ShapeError,
               "Tensor::from_vector: shape ", to_string(shape), " needs ", n, " values, got ",
               values.size());
  return from_data(shape, values.data());
}

std::int64_t Tensor::dim(int i) const {
  const int r = rank();
  const int j = i < 0 ? i + r : i;
  CVATTN_CHECK(j >= 0 && j < r, ShapeError, "Tensor::dim: index ", i, " out of range for shape ",
               to_string(shape_));
  return shape_[static_cast<std::size_t>(j)];
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape s = shape;
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      CVATTN_CHECK(infer < 0, ShapeError, "Tensor::reshape: more than one -1 in ",
                   to_string(shape));
      infer = static_cast<int>(i);
    } else {
      CVATTN_CHECK(s[i] >= 0, ShapeError, "Tensor::reshape: negative dimension in ",
                   to_string(shape));
      // Saturate instead of overflowing: any product beyond numel_ cannot match anyway.
      known = (s[i] != 0 && known > INT64_MAX / s[i]) ? INT64_MAX : known * s[i];
    }
  }
  if (infer >= 0) {
    CVATTN_CHECK(known > 0 && numel_ % known == 0, ShapeError, "Tensor::reshape: cannot view ",
                 to_string(shape_), " as ", to_string(shape));
    s[static_cast<std::size_t>(infer)] = numel_ / known;
  }
  CVATTN_CHECK(checked_numel(s, "Tensor::reshape") == numel_, ShapeError,
               "Tensor::reshape: cannot view ", to_string(shape_), " (", numel_, " elements) as ",
               to_string(shape));
  return Tensor(storage_, std::move(s));
}

Tensor Tensor::slice0(std::int64_t begin, std::int64_t end) const {
  CVATTN_CHECK(rank() >= 1, ShapeError, "Tensor::slice0: rank-0 tensor");
  CVATTN_CHECK(0 <= begin && begin <= end && end <= shape_[0], ShapeError,
               "Tensor::slice0: range [", begin, ", ", end, ") out of bounds for shape ",
               to_string(shape_));
  const std::int64_t inner = shape_[0] ? numel_ / shape_[0] : 0;
  Shape s = shape_;
  s[0] = end - begin;
  if (end == begin || inner == 0) return Tensor::empty(s);
  cv::Mat sub = storage_.colRange(static_cast<int>(begin * inner), static_cast<int>(end * inner));
  return Tensor(std::move(sub), std::move(s));
}

Tensor Tensor::select0(std::int64_t i) const {
  Tensor t = slice0(i, i + 1);
  Shape s(shape_.begin() + 1, shape_.end());
  return t.reshape(s);
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  return from_data(shape_, ptr_);
}

void Tensor::copy_from(const Tensor& src) {
  CVATTN_CHECK(src.numel_ == numel_, ShapeError, "Tensor::copy_from: source ",
               to_string(src.shape_), " and destination ", to_string(shape_),
               " differ in element count");
  if (numel_ > 0 && src.ptr_ != ptr_) {
    std::memmove(ptr_, src.ptr_, static_cast<std::size_t>(numel_) * 4);
  }
}

void Tensor::fill(float value) { std::fill(ptr_, ptr_ + numel_, value); }

bool Tensor::all_finite() const {
  bool ok = true;
  for (std::int64_t i = 0; i < numel_; ++i) ok &= std::isfinite(ptr_[i]);
  return ok;
}

cv::Mat Tensor::to_mat() const {
  CVATTN_CHECK(defined(), ShapeError, "Tensor::to_mat: undefined tensor");
  if (shape_.empty()) return storage_.reshape(1, 1);
  std::vector<int> sizes(shape_.begin(), shape_.end());
  if (sizes.size() == 1) sizes.insert(sizes.begin(), 1);  // cv::Mat has at least 2 dims
  return storage_.reshape(1, static_cast<int>(sizes.size()), sizes.data());
}

cv::Mat Tensor::plane(std::int64_t n, std::int64_t c) const {
  const Nchw s = nchw("Tensor::plane");
  CVATTN_CHECK(0 <= n && n < s.n && 0 <= c && c < s.c, ShapeError, "Tensor::plane: (", n, ", ", c,
               ") out of range for shape ", to_string(shape_));
  const std::int64_t hw = s.h * s.w;
  if (hw == 0) return cv::Mat(static_cast<int>(s.h), static_cast<int>(s.w), CV_32F);  // no data
  const int begin = static_cast<int>((n * s.c + c) * hw);
  return storage_.colRange(begin, begin + static_cast<int>(hw)).reshape(1, static_cast<int>(s.h));
}

Tensor::Nchw Tensor::nchw(const char* name) const {
  CVATTN_CHECK(rank() == 4, ShapeError, name, ": expected a rank-4 [N, C, H, W] tensor, got ",
               to_string(shape_));
  return {shape_[0], shape_[1], shape_[2], shape_[3]};
}

void check_defined(const Tensor& t, const char* name, const char* where) {
  CVATTN_CHECK(t.defined(), ShapeError, where, ": tensor '", name, "' is undefined");
}

void check_rank(const Tensor& t, int rank, const char* name, const char* where) {
  check_defined(t, name, where);
  CVATTN_CHECK(t.rank() == rank, ShapeError, where, ": tensor '", name, "' expected rank ", rank,
               ", got shape ", to_string(t.shape()));
}

void check_shape(const Tensor& t, const Shape& expected, const char* name, const char* where) {
  check_defined(t, name, where);
  bool ok = t.rank() == static_cast<int>(expected.size());
  for (std::size_t i = 0; ok && i < expected.size(); ++i) {
    ok = expected[i] == kAny || expected[i] == t.shape()[i];
  }
  CVATTN_CHECK(ok, ShapeError, where, ": tensor '", name, "' expected shape ", to_string(expected),
               ", got ", to_string(t.shape()));
}

}  // namespace cvattn

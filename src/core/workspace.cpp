#include "core/workspace.hpp"

#include <array>

#include "cvattn/core/error.hpp"

namespace cvattn::detail {
namespace {

// Workspace::kEntries is enough for the deepest nesting: SK path output, polyphase input and
// output, Winograd weights and scratch.
constexpr int kEntries = Workspace::kEntries;

struct Entry {
  cv::Mat buffer;  // 1 x capacity CV_32F: OpenCV's allocator aligns to 64 bytes
  bool busy = false;
};

thread_local std::array<Entry, kEntries> t_cache;

cv::Mat allocate(std::int64_t floats) {
  return cv::Mat(1, static_cast<int>(std::max<std::int64_t>(floats, 1)), CV_32F);
}

}  // namespace

Workspace::Workspace(const Shape& shape, const char* what) {
  const std::int64_t floats = checked_numel(shape, what);
  floats_ = floats;
  if (floats * 4 <= kKeepBytes) {
    for (int i = 0; i < kEntries; ++i) {
      Entry& e = t_cache[static_cast<std::size_t>(i)];
      if (e.busy) continue;
      if (e.buffer.total() < static_cast<std::size_t>(std::max<std::int64_t>(floats, 1))) {
        e.buffer.release();  // first, so that old and new never coexist
        e.buffer = allocate(floats);
      }
      e.busy = true;
      entry_ = i;
      data_ = e.buffer.ptr<float>();
      return;
    }
  }
  own_ = allocate(floats);
  data_ = own_.ptr<float>();
}

Workspace::~Workspace() {
  if (entry_ >= 0) t_cache[static_cast<std::size_t>(entry_)].busy = false;
}

Tensor Workspace::tensor(const Shape& shape) const {
  const std::int64_t n = checked_numel(shape, "workspace tensor");
  CVATTN_CHECK(n <= floats_, ShapeError, "Workspace::tensor: shape ", to_string(shape), " needs ",
               n, " floats, the workspace holds ", floats_);
  if (n == 0) return Tensor::empty(shape);
  const int sizes[2] = {1, static_cast<int>(std::max<std::int64_t>(n, 1))};
  Tensor flat(cv::Mat(2, sizes, CV_32F, data_));
  return flat.reshape(shape);
}

}  // namespace cvattn::detail

#pragma once
// Scratch memory that outlives a call, one small cache per calling thread.
//
// A kernel called again and again (a layer in a network's forward, a benchmark loop) would
// otherwise map, fault in and unmap the same megabytes of scratch on every call: glibc serves
// blocks of that size with mmap, and the page faults then cost more than 5% of a 3x3 conv and
// serialise two threads on the kernel's page-table lock. A Workspace borrows a buffer from a
// thread_local cache of the calling thread instead and gives it back when it goes out of scope.
// The threads of an OpenMP region inside the call only write through the pointer, so the cache
// needs no lock; a Workspace taken while another is alive on the same thread (a module holding
// one while it calls conv2d) gets its own cache entry, or a private buffer when the entries are
// all in use (kEntries per thread are kept, each at most kKeepBytes: 128 MiB in the
// worst case, a few MiB at usual feature-map sizes). Sizes are checked against the tensor
// allocation cap like Tensor::empty; buffers above kKeepBytes are freed after the call rather than
// kept.
#include <cstdint>
#include <opencv2/core.hpp>

#include "cvattn/core/tensor.hpp"

namespace cvattn::detail {

class Workspace {
 public:
  // Largest buffer kept for the next call.
  // Buffers kept per thread.
  static constexpr int kEntries = 8;
  static constexpr std::int64_t kKeepBytes = std::int64_t{16} << 20;

  // At least checked_numel(shape, what) floats (ValueError over the cap, as Tensor::empty),
  // 64-byte aligned, uninitialised.
  Workspace(const Shape& shape, const char* what);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  [[nodiscard]] float* data() const { return data_; }
  // A Tensor of `shape` over this buffer (no copy; valid while the Workspace lives).
  [[nodiscard]] Tensor tensor(const Shape& shape) const;

 private:
  float* data_ = nullptr;
  std::int64_t floats_ = 0;
  int entry_ = -1;  // cache entry borrowed, or -1 for the private buffer
  cv::Mat own_;
};

}  // namespace cvattn::detail

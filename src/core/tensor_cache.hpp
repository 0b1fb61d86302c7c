#pragma once
// The storage allocator of Tensor::empty: large blocks freed by one forward are kept and handed
// to the next tensor of the same size instead of going back to the C library.
//
// A network's forward allocates the same few dozen feature-map sizes on every call. glibc
// returns big freed blocks to the kernel (munmap, or trimming the heap top), so each call would
// fault every page in again and have the kernel zero it: 6-8 % of a MobileNetV3 or ViT forward
// at one thread (docs/performance.md). Blocks of at least kMinBytes are kept in one process-wide
// cache, bounded by tensor_cache_bytes() (cvattn::set_tensor_cache_bytes, tensor.hpp), oldest
// evicted first; a request takes the smallest kept block that holds it, when that block is at
// most a quarter larger. Smaller blocks are served by cv::fastMalloc directly. The cache is
// guarded by a mutex: tensors may be created and released on any thread.
#include <opencv2/core.hpp>

namespace cvattn::detail {

// The allocator to set as cv::Mat::allocator before create(); lives as long as the process.
[[nodiscard]] cv::MatAllocator* tensor_allocator();

}  // namespace cvattn::detail

#include "core/tensor_cache.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define CVATTN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CVATTN_ASAN 1
#endif
#endif

namespace cvattn {
namespace {

// Below this glibc serves blocks from its own free lists without touching the kernel.
constexpr std::size_t kMinBytes = std::size_t{64} << 10;
constexpr std::size_t kPage = 4096;

// Under AddressSanitizer a reused block would hide a use after free: the cache starts empty
// and disabled there (tests enable it explicitly).
#ifdef CVATTN_ASAN
constexpr std::int64_t kDefaultCacheBytes = 0;
#else
constexpr std::int64_t kDefaultCacheBytes = std::int64_t{256} << 20;
#endif

std::atomic<std::int64_t> g_cache_bytes{kDefaultCacheBytes};

class Cache {
 public:
  void* take(std::size_t bytes) {
    if (bytes >= kMinBytes) {
      const std::size_t want = round_up(bytes);
      std::lock_guard<std::mutex> lock(mutex_);
      std::size_t best = blocks_.size();
      for (std::size_t i = 0; i < blocks_.size(); ++i) {
        const std::size_t size = blocks_[i].bytes;
        if (size >= want && size - want <= want / 4 &&
            (best == blocks_.size() || size < blocks_[best].bytes)) {
          best = i;
        }
      }
      if (best != blocks_.size()) {
        const Block block = blocks_[best];
        blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
        kept_ -= block.bytes;
        return block.data;
      }
      return cv::fastMalloc(want);
    }
    return cv::fastMalloc(bytes);
  }

  void give_back(void* data, std::size_t bytes) {
    if (bytes < kMinBytes) {
      cv::fastFree(data);
      return;
    }
    const std::size_t size = round_up(bytes);
    const auto cap = static_cast<std::size_t>(g_cache_bytes.load());
    std::vector<void*> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (size > cap) {
        evicted.push_back(data);
      } else {
        blocks_.push_back({data, size});
        kept_ += size;
      }
      evict_to(cap, evicted);
    }
    for (void* p : evicted) cv::fastFree(p);  // outside the lock
  }

  void trim(std::size_t cap) {
    std::vector<void*> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      evict_to(cap, evicted);
    }
    for (void* p : evicted) cv::fastFree(p);
  }

  std::size_t kept() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kept_;
  }

 private:
  struct Block {
    void* data;
    std::size_t bytes;
  };

  static std::size_t round_up(std::size_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

  // Oldest first: blocks_ is in the order they were given back.
  void evict_to(std::size_t cap, std::vector<void*>& evicted) {
    std::size_t drop = 0;
    while (kept_ > cap && drop < blocks_.size()) {
      kept_ -= blocks_[drop].bytes;
      evicted.push_back(blocks_[drop].data);
      ++drop;
    }
    blocks_.erase(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(drop));
  }

  std::mutex mutex_;
  std::vector<Block> blocks_;
  std::size_t kept_ = 0;
};

// Never destroyed: tensors held by other static objects may be released after main returns.
Cache& cache() {
  static Cache* const instance = new Cache();
  return *instance;
}

class TensorAllocator final : public cv::MatAllocator {
 public:
  cv::UMatData* allocate(int dims, const int* sizes, int type, void* data0, std::size_t* step,
                         cv::AccessFlag /*flags*/, cv::UMatUsageFlags /*usage*/) const override {
    // Row-major steps as cv::Mat's own allocator computes them.
    std::size_t total = CV_ELEM_SIZE(type);
    for (int i = dims - 1; i >= 0; --i) {
      if (step) {
        if (data0 && step[i] != cv::Mat::AUTO_STEP) {
          total = step[i];
        } else {
          step[i] = total;
        }
      }
      total *= static_cast<std::size_t>(sizes[i]);
    }
    auto* data = static_cast<uchar*>(data0 ? data0 : cache().take(total));
    auto* u = new cv::UMatData(this);
    u->data = u->origdata = data;
    u->size = total;
    if (data0) u->flags |= cv::UMatData::USER_ALLOCATED;
    return u;
  }

  bool allocate(cv::UMatData* u, cv::AccessFlag /*flags*/,
                cv::UMatUsageFlags /*usage*/) const override {
    return u != nullptr;
  }

  void deallocate(cv::UMatData* u) const override {
    if (!u) return;
    CV_Assert(u->urefcount == 0 && u->refcount == 0);
    if (!(u->flags & cv::UMatData::USER_ALLOCATED)) cache().give_back(u->origdata, u->size);
    delete u;
  }
};

}  // namespace

void set_tensor_cache_bytes(std::int64_t bytes) {
  CVATTN_CHECK(bytes >= 0, ValueError, "set_tensor_cache_bytes: size must be >= 0, got ", bytes);
  g_cache_bytes.store(bytes);
  cache().trim(static_cast<std::size_t>(bytes));
}

std::int64_t tensor_cache_bytes() { return g_cache_bytes.load(); }

std::int64_t tensor_cache_kept_bytes() { return static_cast<std::int64_t>(cache().kept()); }

namespace detail {

cv::MatAllocator* tensor_allocator() {
  static TensorAllocator* const instance = new TensorAllocator();
  return instance;
}

}  // namespace detail
}  // namespace cvattn

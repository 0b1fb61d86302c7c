#pragma once
// ThreadScope: sets the library's thread count for a block and restores it when the block ends,
// so a failing assertion cannot leave later tests on the wrong count.
#include "cvattn/core/parallel.hpp"

namespace cvattn::test {

class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(num_threads()) { set_num_threads(threads); }
  ~ThreadScope() { set_num_threads(saved_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

}  // namespace cvattn::test

#pragma once
// The library's thread count in tests: ThreadScope sets it for a block and restores it when the
// block ends (so a failing assertion cannot leave later tests on the wrong count), and
// expect_same_on_one_and_two_threads checks that the count does not change a result.
#include <gtest/gtest.h>

#include "cvattn/core/parallel.hpp"
#include "support/concurrency.hpp"
#include "support/tensor_near.hpp"

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

// call() on one thread and on two must give exactly the same values. The callable may return a
// Tensor, a std::vector<Tensor> or a std::map<std::string, Tensor>.
template <class Call>
void expect_same_on_one_and_two_threads(Call&& call) {
  const auto one = [&] {
    const ThreadScope scope(1);
    return detail::flatten(call());
  }();
  const auto two = [&] {
    const ThreadScope scope(2);
    return detail::flatten(call());
  }();
  ASSERT_EQ(one.size(), two.size());
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_TENSOR_NEAR(two[i].second, one[i].second, (Tolerance{0, 0})) << one[i].first;
  }
}

}  // namespace cvattn::test

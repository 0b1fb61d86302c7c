#pragma once
// The concurrency test pattern: build and load a module once, then call it from many threads at
// the same time and require every result to equal the single-threaded one bit for bit. Under the
// `tsan` preset (ThreadSanitizer, OpenMP off) any data race in forward is reported as well.
//
//   TEST(SqueezeExcite, ConcurrencySharedInstance) {   // name it *Concurrency* or *ThreadSafe*
//     const auto module = make_loaded_module();        // build + load first
//     const Tensor x = test::random_tensor({2, 8, 9, 7}, /*seed=*/1);
//     test::expect_thread_safe([&] { return module->forward(x); });
//   }
//
// The callable may return a Tensor, a std::vector<Tensor> or a std::map<std::string, Tensor>
// (attention maps); it must not mutate shared state itself.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "cvattn/core/tensor.hpp"

namespace cvattn::test {

namespace detail {

inline std::vector<std::pair<std::string, Tensor>> flatten(const Tensor& t) { return {{"", t}}; }
inline std::vector<std::pair<std::string, Tensor>> flatten(const std::vector<Tensor>& ts) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (std::size_t i = 0; i < ts.size(); ++i) out.emplace_back("#" + std::to_string(i), ts[i]);
  return out;
}
inline std::vector<std::pair<std::string, Tensor>> flatten(const std::map<std::string, Tensor>& m) {
  return {m.begin(), m.end()};
}

// Empty when a and b have the same names, shapes and bits (NaN payloads included).
inline std::string difference(const std::vector<std::pair<std::string, Tensor>>& a,
                              const std::vector<std::pair<std::string, Tensor>>& b) {
  if (a.size() != b.size()) return "different number of results";
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string& name = a[i].first;
    const Tensor& x = a[i].second;
    const Tensor& y = b[i].second;
    if (name != b[i].first) return "result '" + name + "' vs '" + b[i].first + "'";
    if (x.defined() != y.defined() || x.shape() != y.shape()) {
      return "result '" + name + "': shape " + to_string(x.shape()) + " vs " + to_string(y.shape());
    }
    if (x.numel() > 0 &&
        std::memcmp(x.data(), y.data(), static_cast<std::size_t>(x.numel()) * 4) != 0) {
      return "result '" + name + "': values differ";
    }
  }
  return "";
}

}  // namespace detail

// Calls `call` once on this thread for the reference, then from `threads` std::threads started
// together, `iterations` times each, and expects every result to be bit-identical to the
// reference. Exceptions thrown on any thread are test failures.
template <class Call>
void expect_thread_safe(Call&& call, int threads = 8, int iterations = 3) {
  const auto reference = detail::flatten(call());
  std::mutex mutex;
  std::condition_variable go;
  bool started = false;
  std::vector<std::string> failures;
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      {
        std::unique_lock<std::mutex> lock(mutex);
        go.wait(lock, [&] { return started; });
      }
      for (int i = 0; i < iterations; ++i) {
        std::string failure;
        try {
          failure = detail::difference(reference, detail::flatten(call()));
        } catch (const std::exception& e) {
          failure = std::string("threw: ") + e.what();
        }
        if (!failure.empty()) {
          std::lock_guard<std::mutex> lock(mutex);
          failures.push_back("thread " + std::to_string(t) + ", call " + std::to_string(i) + ": " +
                             failure);
        }
      }
    });
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    started = true;
  }
  go.notify_all();
  for (auto& th : pool) th.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
}

}  // namespace cvattn::test

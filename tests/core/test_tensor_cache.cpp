// The tensor storage cache (src/core/tensor_cache.hpp, cvattn::set_tensor_cache_bytes).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"

using cvattn::Tensor;

namespace {

// Every test starts from an empty cache of 64 MiB and leaves the default behind.
class TensorCache : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = cvattn::tensor_cache_bytes();
    cvattn::set_tensor_cache_bytes(0);
    cvattn::set_tensor_cache_bytes(std::int64_t{64} << 20);
  }
  void TearDown() override { cvattn::set_tensor_cache_bytes(saved_); }
  std::int64_t saved_ = 0;
};

}  // namespace

TEST_F(TensorCache, AReleasedBlockServesTheNextTensorOfItsSize) {
  const float* first = nullptr;
  {
    Tensor a = Tensor::empty({256, 1024});  // 1 MiB
    first = a.data();
  }
  EXPECT_EQ(cvattn::tensor_cache_kept_bytes(), std::int64_t{1} << 20);
  const Tensor b = Tensor::zeros({1024, 256});  // same bytes, other shape
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(cvattn::tensor_cache_kept_bytes(), 0);
  EXPECT_EQ(b.data()[b.numel() - 1], 0.0f);  // reused storage is initialised as asked
}

TEST_F(TensorCache, ABlockMuchLargerThanTheRequestIsNotHandedOut) {
  { const Tensor big = Tensor::empty({4, 1024, 1024}); }  // 16 MiB kept
  const Tensor small = Tensor::empty({256, 1024});        // 1 MiB: not from the 16 MiB block
  EXPECT_EQ(cvattn::tensor_cache_kept_bytes(), std::int64_t{16} << 20);
  const Tensor almost = Tensor::empty({4, 1000, 1024});  // within a quarter: takes it
  EXPECT_EQ(cvattn::tensor_cache_kept_bytes(), 0);
}

TEST_F(TensorCache, SmallTensorsAreNotKept) {
  { const Tensor t = Tensor::empty({100, 100}); }  // 40 KB
  EXPECT_EQ(cvattn::tensor_cache_kept_bytes(), 0);
}

TEST_F(TensorCache, TheCapEvictsTheOldestAndZeroFreesEverything) {
  cvattn::set_tensor_cache_bytes(std::int64_t{3} << 20);
  {
    const Tensor a = Tensor::empty({256, 1024});
    const Tensor b = Tensor::empty({2, 256, 1024});
    const Tensor c = Tensor::empty({256, 1024});
  }  // released c, b, a: 4 MiB over a 3 MiB cap, c (oldest) is dropped
  EXPECT_EQ(cvattn::tensor_cache_kept_bytes(), std::int64_t{3} << 20);
  { const Tensor huge = Tensor::empty({4, 1024, 1024}); }  // larger than the cap: freed
  EXPECT_EQ(cvattn::tensor_cache_kept_bytes(), std::int64_t{3} << 20);
  cvattn::set_tensor_cache_bytes(0);
  EXPECT_EQ(cvattn::tensor_cache_kept_bytes(), 0);
  EXPECT_THROW(cvattn::set_tensor_cache_bytes(-1), cvattn::ValueError);
}

TEST_F(TensorCache, ViewsKeepTheirStorageAlive) {
  Tensor view;
  {
    const Tensor a = Tensor::full({256, 1024}, 2.0f);
    view = a.reshape({1024, 256});
  }
  EXPECT_EQ(cvattn::tensor_cache_kept_bytes(), 0);  // still referenced by the view
  const Tensor other = Tensor::full({256, 1024}, 3.0f);
  EXPECT_NE(other.data(), view.data());
  EXPECT_EQ(view.data()[5 * 256 + 7], 2.0f);
}

TEST_F(TensorCache, ThreadSafeAllocationAndRelease) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) {
        Tensor a = Tensor::full({64 + (i + t) % 3 * 64, 1024}, static_cast<float>(t));
        ASSERT_EQ(a.data()[a.numel() - 1], static_cast<float>(t));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(cvattn::tensor_cache_kept_bytes(), std::int64_t{64} << 20);
}

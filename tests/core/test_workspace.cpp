// detail::Workspace (src/core/workspace.hpp): scratch kept per calling thread across calls.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"

using cvattn::Tensor;
using cvattn::detail::Workspace;

TEST(Workspace, IsReusedByTheNextCallOnTheSameThread) {
  float* first = nullptr;
  {
    const Workspace w({1000}, "test");
    first = w.data();
    first[999] = 1.0f;
  }
  const Workspace again({500}, "test");  // smaller: same buffer
  EXPECT_EQ(again.data(), first);
}

TEST(Workspace, NestedWorkspacesDoNotOverlap) {
  // One more than the cache holds: the last one gets a private buffer.
  constexpr int kCount = Workspace::kEntries + 1;
  std::vector<std::unique_ptr<Workspace>> held;
  for (int i = 0; i < kCount; ++i)
    held.push_back(std::make_unique<Workspace>(cvattn::Shape{256}, "test"));
  for (int i = 0; i < kCount; ++i) {
    for (int j = i + 1; j < kCount; ++j) {
      const float* a = held[static_cast<std::size_t>(i)]->data();
      const float* b = held[static_cast<std::size_t>(j)]->data();
      EXPECT_TRUE(a + 256 <= b || b + 256 <= a) << i << " and " << j << " overlap";
    }
  }
}

TEST(Workspace, IsAlignedAndGrows) {
  { const Workspace small({16}, "test"); }
  const Workspace big({1 << 20}, "test");
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(big.data()) % 64, 0u);
  big.data()[(1 << 20) - 1] = 2.0f;  // the whole size is writable (ASan checks it)
}

TEST(Workspace, OtherThreadsGetTheirOwnBuffer) {
  const Workspace mine({1024}, "test");
  const float* theirs = nullptr;
  std::thread t([&] {
    const Workspace w({1024}, "test");
    theirs = w.data();
  });
  t.join();
  EXPECT_NE(theirs, mine.data());
}

TEST(Workspace, HonoursTheAllocationCapAndNamesTheCaller) {
  const std::int64_t old = cvattn::max_tensor_bytes();
  cvattn::set_max_tensor_bytes(1 << 20);
  try {
    const Workspace w({1 << 20}, "conv2d (scratch)");
    cvattn::set_max_tensor_bytes(old);
    FAIL() << "no error over the cap";
  } catch (const cvattn::ValueError& e) {
    cvattn::set_max_tensor_bytes(old);
    EXPECT_NE(std::string(e.what()).find("conv2d (scratch)"), std::string::npos) << e.what();
  }
}

TEST(Workspace, TensorViewSharesTheBuffer) {
  const Workspace w({2, 3, 4}, "test");
  Tensor t = w.tensor({2, 12});
  EXPECT_EQ(t.data(), w.data());
  EXPECT_EQ(t.shape(), cvattn::Shape({2, 12}));
  EXPECT_THROW((void)w.tensor({5, 5}), cvattn::ShapeError);
}

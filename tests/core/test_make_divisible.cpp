#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "cvattn/core/make_divisible.hpp"
#include "support/call.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

struct Row {
  std::int64_t c, se, cbam, sk, non_local;
};

TEST(MakeDivisible, MatchesTheModulesTable) {
  // docs/modules.md §1.1: SE (C/16, div 8, rl 0), CBAM (C/16, div 1, rl 0), SK (C/16, div 8, rl
  // .9), NonLocal (C/8, div 8, rl .9).
  const Row rows[] = {
      {16, 8, 1, 8, 8},           {32, 8, 2, 8, 8},      {64, 8, 4, 8, 8},
      {72, 8, 5, 8, 16},          {96, 8, 6, 8, 16},     {128, 8, 8, 8, 16},
      {192, 16, 12, 16, 24},      {200, 16, 13, 16, 24}, {256, 16, 16, 16, 32},
      {320, 24, 20, 24, 40},      {512, 32, 32, 32, 64}, {1024, 64, 64, 64, 128},
      {2048, 128, 128, 128, 256},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.c);
    const double c = static_cast<double>(r.c);
    EXPECT_EQ(make_divisible(c / 16, 8, 0, 0.0), r.se);
    EXPECT_EQ(make_divisible(c / 16, 1, 0, 0.0), r.cbam);
    EXPECT_EQ(make_divisible(c / 16, 8), r.sk);
    EXPECT_EQ(make_divisible(c / 8, 8), r.non_local);
  }
}

TEST(MakeDivisible, FollowsPythonSemantics) {
  EXPECT_EQ(make_divisible(9.0, 8), 16);           // 8 < 0.9 * 9: bumped
  EXPECT_EQ(make_divisible(9.0, 8, 0, 0.0), 8);    // round_limit 0: never bumped
  EXPECT_EQ(make_divisible(12.5, 1, 0, 0.0), 13);  // trunc(12.5 + 0.5)
  EXPECT_EQ(make_divisible(0.0, 8), 8);            // min_value defaults to the divisor
  EXPECT_EQ(make_divisible(3.0, 8, 32), 32);       // explicit min_value
  EXPECT_EQ(make_divisible(12.0, 8), 16);          // trunc(16) // 8 * 8
  EXPECT_EQ(make_divisible(11.9, 8), 16);          // trunc(15.9) = 15 -> 8 < 0.9 * 11.9 -> 16
  EXPECT_EQ(make_divisible(11.9, 8, 0, 0.0), 8);
  EXPECT_EQ(make_divisible(48.0, 16), 48);
  EXPECT_EQ(make_divisible(24.0, 16), 32);  // trunc(32) // 16 * 16
}

TEST(MakeDivisible, RejectsBadArguments) {
  EXPECT_THAT(test::Call([] { (void)make_divisible(4.0, 0); }),
              ThrowsMessage<ValueError>(HasSubstr("divisor must be in [1, 2^30], got 0")));
  EXPECT_THAT(test::Call([] { (void)make_divisible(-1.0, 8); }),
              ThrowsMessage<ValueError>(HasSubstr("value must be in [0, 1e15], got -1")));
  EXPECT_THAT(test::Call([] { (void)make_divisible(NAN, 8); }),
              ThrowsMessage<ValueError>(HasSubstr("value must be in [0, 1e15]")));
  EXPECT_THAT(test::Call([] { (void)make_divisible(1e300, 8); }),
              ThrowsMessage<ValueError>(HasSubstr("value must be in [0, 1e15]")));
  EXPECT_THAT(test::Call([] { (void)make_divisible(4.0, 8, -1); }),
              ThrowsMessage<ValueError>(HasSubstr("min_value must be >= 0")));
}

}  // namespace
}  // namespace cvattn

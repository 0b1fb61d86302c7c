// detail::cache_bytes and parse_cache_size (src/core/cache_sizes.hpp): the cache sizes that
// size conv2d's Winograd tasks and choose SE's streaming stores.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/cache_sizes.hpp"

using cvattn::detail::cache_bytes;
using cvattn::detail::parse_cache_size;

TEST(CacheSizes, ParsesTheFormsSysfsWrites) {
  EXPECT_EQ(parse_cache_size("48K"), 48 * 1024);
  EXPECT_EQ(parse_cache_size("2048K"), 2 * 1024 * 1024);
  EXPECT_EQ(parse_cache_size("32M"), std::int64_t{32} << 20);
  EXPECT_EQ(parse_cache_size("1G"), std::int64_t{1} << 30);
  EXPECT_EQ(parse_cache_size("1048576"), 1048576);
}

TEST(CacheSizes, AnythingElseIsUnknown) {
  for (const char* text :
       {"", "K", "-1K", "12KB", "12 K", "1.5M", "12T", "99999999999999999999K"}) {
    EXPECT_EQ(parse_cache_size(text), 0) << text;
  }
  EXPECT_EQ(parse_cache_size(nullptr), 0);
}

TEST(CacheSizes, LevelsOutsideOneToThreeAreUnknown) {
  EXPECT_EQ(cache_bytes(0), 0);
  EXPECT_EQ(cache_bytes(4), 0);
  EXPECT_EQ(cache_bytes(-1), 0);
  // What the system reports, if anything: never negative, and stable.
  for (int level = 1; level <= 3; ++level) {
    EXPECT_GE(cache_bytes(level), 0);
    EXPECT_EQ(cache_bytes(level), cache_bytes(level));
  }
}

#pragma once
// The packed channel blocks that a sampling kernel of the target in use reads for one job
// (functional/detail/channel_tiles-inl.h): the caller sizes its workspace and its packing tasks
// with it. Private to cvattn.
#include <cstdint>

namespace cvattn::detail {

struct ChannelPlan {
  std::int64_t blocks = 0;    // packed blocks (0: the per-channel kernels only)
  std::int64_t channels = 0;  // channels they hold, from channel 0; the rest are not packed
  std::int64_t floats = 0;    // size of the packed image
};

}  // namespace cvattn::detail

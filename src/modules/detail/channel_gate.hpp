#pragma once
// The forward of a pool -> excite -> scale channel gate (SqueezeExcitation, Eca; Cbam shares
// the input check): the module supplies how to pool a sample's channels and how to turn the
// pooled vector into the gate; this runs them over the batch and writes y = x * gate.
#include <cstdint>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"
#include "modules/detail/channel_kernels.hpp"

namespace cvattn::detail {

// x must be [N, channels, H, W] (channels kAny: any) with H, W >= 1, since the gate pools over
// them; ShapeError "<where>: tensor 'x' expected H, W >= 1 (<why>), got [..]" otherwise.
inline Tensor::Nchw gate_input(const Tensor& x, std::int64_t channels, const char* where,
                               const char* why) {
  check_shape(x, {kAny, channels, kAny, kAny}, "x", where);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, where, ": tensor 'x' expected H, W >= 1 (", why,
               "), got ", to_string(x.shape()));
  return s;
}

// For x [n, channels, hw]: pool(i, c0, c1) pools channels [c0, c1) of sample i, excite(i) turns
// sample i's pooled values into gate[i, :], then y[i, c, :] = x[i, c, :] * gate[i, c]. Neither
// callable may throw (allocate and validate first).
template <class Pool, class Excite>
void pool_excite_scale(const float* x, float* y, const float* gate, std::int64_t n,
                       std::int64_t channels, std::int64_t hw, Pool&& pool, Excite&& excite) {
  const std::int64_t numel = n * channels * hw;
  const bool stream = numel * std::int64_t{sizeof(float)} >= kStreamingBytes;
  auto scale = [&](std::int64_t i, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int64_t off = (i * channels + c) * hw;
      scale_plane(x + off, y + off, gate[i * channels + c], hw, stream);
    }
  };
  for_samples(
      n, numel,
      [&](std::int64_t begin, std::int64_t end) {
        // Software pipeline over the thread's samples: scaling sample i (streaming writes)
        // and pooling sample i + 1 (reads) share one sweep, so reads and writes overlap as in
        // a memcpy instead of alternating.
        pool(begin, 0, channels);
        for (std::int64_t i = begin; i < end; ++i) {
          excite(i);
          for (std::int64_t c = 0; c < channels; ++c) {
            scale(i, c, c + 1);
            if (i + 1 < end) pool(i + 1, c, c + 1);
          }
        }
        store_fence();
      },
      [&](std::int64_t i) {
        parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) { pool(i, b, e); });
        excite(i);
        parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) {
          scale(i, b, e);
          store_fence();
        });
      });
}

}  // namespace cvattn::detail

#pragma once
// Fused kernels of the channel-attention functions (functional/channel_attention.cpp: SE, ECA,
// CBAM). Private to cvattn.
//
// These functions are memory bound: the floor is one read of x to pool it and one read of x plus
// one write of y to scale it. The kernels work on one sample at a time so the second read of a
// sample hits the cache, and for_samples() keeps whole samples on one thread when there are
// enough of them. Nothing here throws: callers validate and allocate first. The SIMD bodies
// (scale_plane, scale_plane2, channel_mean_max_scaled, spatial_conv) are dispatched at run time
// (channel_kernels-inl.h); their reference twins are in functional/reference/channel_kernels.hpp.
#include <cmath>
#include <cstdint>

#include "core/parallel_for.hpp"
#include "cvattn/modules/layer_kinds.hpp"
#include "functional/detail/reduce.hpp"

namespace cvattn::detail {

// Outputs larger than this are written with streaming (non-temporal) stores: they cannot stay
// in the last-level cache anyway, and streaming saves the read-for-ownership of every output
// line. Smaller outputs use plain stores (a later reader finds them in cache). The last-level
// cache size of cpu0 (/sys/devices/system/cpu/cpu0/cache/index3/size, read once; 32 MiB when
// unknown).
[[nodiscard]] std::int64_t streaming_store_bytes();

// y[i] = x[i] * g for i < n; stream: non-temporal stores (call store_fence() before the end of
// the parallel task).
void scale_plane(const float* x, float* y, float g, std::int64_t n, bool stream);
// y[i] = (x[i] * g) * s[i] for i < n (CBAM's two gates, in PyTorch's order of multiplies).
void scale_plane2(const float* x, float* y, float g, const float* s, std::int64_t n, bool stream);
// y[i] = x[i] * a + b, or (x[i] * a + b) + r[i] when r is not null, for i < n: inference
// batch norm of one plane (batch_norm, batch_norm_add). Written as a multiply and an add; the
// compiler may fuse them where the target has FMA (one rounding less).
void affine_plane(const float* x, float* y, float a, float b, const float* r, std::int64_t n);
// Orders this thread's streaming stores before whatever follows (end of a parallel task).
void store_fence();

// CBAM's spatial-attention input for pixels [p0, p1) of one sample x [C, hw], computed from
// the channel-refined values v = x[c, p] * g[c] without storing them: mean[p - p0] = mean_c v,
// max[p - p0] = max_c v (NaN propagates, as torch.amax). The sum runs in channel order.
void channel_mean_max_scaled(const float* x, const float* g, std::int64_t channels, std::int64_t hw,
                             std::int64_t p0, std::int64_t p1, float* mean, float* max);

// Applies the gate in place to n logits.
void apply_gate(GateLayer gate, float* u, std::int64_t n);

// sum_i a[i] * b[i] accumulated in double.
[[nodiscard]] double dot(const float* a, const float* b, std::int64_t n);

// CBAM's spatial conv, 2 -> 1 channels, k x k taps, no bias, in two steps: pad_planes copies
// in [2, h, w] into padded [2, h + k - 1, w + k - 1] with a zero border of (k-1)/2; spatial_conv
// then computes output rows [row0, row1) of out [h, w] from it, branch-free.
void pad_planes(const float* in, std::int64_t k, std::int64_t h, std::int64_t w, float* padded);
void spatial_conv(const float* padded, const float* weight, std::int64_t k, std::int64_t h,
                  std::int64_t w, std::int64_t row0, std::int64_t row1, float* out);

// Inputs smaller than this run on the calling thread: waking a thread team costs more than the
// work (tens of microseconds, and milliseconds on an oversubscribed machine).
inline constexpr std::int64_t kParallelMinElements = std::int64_t{1} << 16;

// Runs samples [0, n) of a tensor of `numel` elements: while whole rounds of T samples remain,
// each thread takes a contiguous range of whole samples (whole(begin, end), everything on one
// thread, best for the cache); the last n % T samples run one after the other, each spread over
// all threads by intra(i). With one thread, or a small tensor, everything is whole(0, n).
template <class Whole, class Intra>
void for_samples(std::int64_t n, std::int64_t numel, Whole&& whole, Intra&& intra) {
  const std::int64_t threads = numel < kParallelMinElements ? 1 : max_threads();
  if (threads <= 1) {
    if (n > 0) whole(std::int64_t{0}, n);
    return;
  }
  const std::int64_t full = (n / threads) * threads;
  parallel_chunks(full, whole);
  for (std::int64_t i = full; i < n; ++i) intra(i);
}

// For x [n, channels, hw]: pool(i, c0, c1) pools channels [c0, c1) of sample i, excite(i) turns
// sample i's pooled values into gate[i, :], then y[i, c, :] = x[i, c, :] * gate[i, c]. Neither
// callable may throw (allocate and validate first).
template <class Pool, class Excite>
void pool_excite_scale(const float* x, float* y, const float* gate, std::int64_t n,
                       std::int64_t channels, std::int64_t hw, Pool&& pool, Excite&& excite) {
  const std::int64_t numel = n * channels * hw;
  const bool stream = numel * std::int64_t{sizeof(float)} > streaming_store_bytes();
  auto scale = [&](std::int64_t i, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int64_t off = (i * channels + c) * hw;
      scale_plane(x + off, y + off, gate[i * channels + c], hw, stream);
    }
  };
  for_samples(
      n, numel,
      [&](std::int64_t begin, std::int64_t end) {
        // Software pipeline over the thread's samples: scaling sample i (writes) and pooling
        // sample i + 1 (reads) share one sweep, so reads and writes overlap as in a memcpy
        // instead of alternating.
        pool(begin, 0, channels);
        for (std::int64_t i = begin; i < end; ++i) {
          excite(i);
          for (std::int64_t c = 0; c < channels; ++c) {
            scale(i, c, c + 1);
            if (i + 1 < end) pool(i + 1, c, c + 1);
          }
        }
        if (stream) store_fence();
      },
      [&](std::int64_t i) {
        parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) { pool(i, b, e); });
        excite(i);
        parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) {
          scale(i, b, e);
          if (stream) store_fence();
        });
      });
}

}  // namespace cvattn::detail

#pragma once
// Fused kernels of the channel-attention functions (functional/channel_attention.cpp: SE, ECA,
// CBAM). Private to cvattn.
//
// These functions are memory bound: the floor is one read of x to pool it and one read of x plus
// one write of y to scale it. The kernels work on one sample at a time so the second read of a
// sample hits the cache, and for_samples() keeps whole samples on one thread when there are
// enough of them. Nothing here throws: callers validate and allocate first. The SIMD bodies
// (pool_planes, scale_planes, scale_plane, scale_plane2, dot_rows, channel_mean_max_scaled,
// spatial_conv) are dispatched at run time
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

// The squeeze of SE and ECA: pooled[c] for planes c < count of x (hw >= 1 apart): the plane
// mean (plane_mean), or with add_max 0.5 * mean + 0.5 * max (timm's add_maxpool).
void pool_planes(const float* x, std::int64_t count, std::int64_t hw, bool add_max, float* pooled);
// y[c, :] = x[c, :] * g[c] for planes c < count, as scale_plane. One dispatch for all the
// planes (a dispatch per 784-float plane cost ~8 % of SE).
void scale_planes(const float* x, float* y, const float* g, std::int64_t count, std::int64_t hw,
                  bool stream);
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

// out[r] = float(sum_c w[r * cols + c] * v[c] + bias[r]) for r < rows, summed in double (bias
// null: no bias): the gate MLPs' 1x1 convs.
void dot_rows(const float* w, std::int64_t rows, std::int64_t cols, const float* v,
              const float* bias, float* out);

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

// For x [n, channels, hw]: pooled[i, :] = pool_planes of sample i, excite(i) turns it into
// gate[i, :], then y[i, c, :] = x[i, c, :] * gate[i, c]. excite may not throw (allocate and
// validate first).
template <class Excite>
void pool_excite_scale(const float* x, float* y, const float* gate, float* pooled, std::int64_t n,
                       std::int64_t channels, std::int64_t hw, bool add_max, Excite&& excite) {
  const std::int64_t numel = n * channels * hw;
  const std::int64_t sample = channels * hw;
  const bool stream = numel * std::int64_t{sizeof(float)} > streaming_store_bytes();
  for_samples(
      n, numel,
      [&](std::int64_t begin, std::int64_t end) {
        // One sample at a time: scaling re-reads the sample just pooled while it is still in the
        // caches. Pooling the next sample in the scaling sweep instead (a memcpy-like sweep,
        // from when every output was streamed) took 5-16 % longer on Zen 5 (docs/performance.md).
        for (std::int64_t i = begin; i < end; ++i) {
          pool_planes(x + i * sample, channels, hw, add_max, pooled + i * channels);
          excite(i);
          scale_planes(x + i * sample, y + i * sample, gate + i * channels, channels, hw, stream);
        }
        if (stream) store_fence();
      },
      [&](std::int64_t i) {
        parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) {
          pool_planes(x + i * sample + b * hw, e - b, hw, add_max, pooled + i * channels + b);
        });
        excite(i);
        parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) {
          scale_planes(x + i * sample + b * hw, y + i * sample + b * hw, gate + i * channels + b,
                       e - b, hw, stream);
          if (stream) store_fence();
        });
      });
}

}  // namespace cvattn::detail

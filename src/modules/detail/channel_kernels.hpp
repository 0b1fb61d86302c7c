#pragma once
// Fused kernels shared by the channel-attention modules (SqueezeExcitation, Eca, Cbam).
//
// These modules are memory bound: the floor is one read of x to pool it and one read of x plus
// one write of y to scale it. The kernels work on one sample at a time so the second read of a
// sample hits the cache, and for_samples() keeps whole samples on one thread when there are
// enough of them. Nothing here throws: callers validate and allocate first.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/parallel_for.hpp"
#include "cvattn/modules/layer_kinds.hpp"

namespace cvattn::detail {

struct PlaneStats {
  float mean;
  float max;
};

// Mean (sum / n, as PyTorch's mean) of n contiguous floats, accumulated in float lanes per
// block and in double across blocks.
[[nodiscard]] float plane_mean(const float* p, std::int64_t n);
// Mean and NaN-propagating max of n contiguous floats in one pass.
[[nodiscard]] PlaneStats plane_mean_max(const float* p, std::int64_t n);

// Outputs at least this large are written with streaming (non-temporal) stores: they cannot
// stay in cache anyway, and streaming saves the read-for-ownership of every output line, which
// is a third of the memory traffic of a pool-and-scale module.
inline constexpr std::int64_t kStreamingBytes = std::int64_t{4} << 20;

// y[i] = x[i] * g for i < n; stream: non-temporal stores (call store_fence() before the end of
// the parallel task).
void scale_plane(const float* x, float* y, float g, std::int64_t n, bool stream);
// y[i] = (x[i] * g) * s[i] for i < n (CBAM's two gates, in PyTorch's order of multiplies).
void scale_plane2(const float* x, float* y, float g, const float* s, std::int64_t n, bool stream);
// Orders this thread's streaming stores before whatever follows (end of a parallel task).
void store_fence();

// CBAM's spatial-attention input for pixels [p0, p1) of one sample x [C, hw], computed from
// the channel-refined values v = x[c, p] * g[c] without storing them: mean[p - p0] = mean_c v,
// max[p - p0] = max_c v (NaN propagates, as torch.amax).
void channel_mean_max_scaled(const float* x, const float* g, std::int64_t channels,
                             std::int64_t hw, std::int64_t p0, std::int64_t p1, float* mean,
                             float* max);

// Applies the gate in place to n logits.
void apply_gate(GateLayer gate, float* u, std::int64_t n);

// sum_i a[i] * b[i] accumulated in double.
[[nodiscard]] double dot(const float* a, const float* b, std::int64_t n);

// Inference BatchNorm as PyTorch's CPU kernel folds it: alpha = weight / sqrt(var + eps),
// beta = bias - mean * alpha, in float32; y = x * alpha + beta.
struct BnAffine {
  float alpha;
  float beta;
};
[[nodiscard]] inline BnAffine fold_batch_norm(float weight, float bias, float mean, float var,
                                              float eps = 1e-5f) {
  const float invstd = 1.0f / std::sqrt(var + eps);
  const float alpha = invstd * weight;
  return {alpha, bias - mean * alpha};
}

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

}  // namespace cvattn::detail

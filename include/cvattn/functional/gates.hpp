#pragma once
// Kernels of timm's channel and context gates (docs/gates.md): the pooling, gating and
// rescaling steps of EffectiveSEModule, CecaModule, GatherExcite, GlobalContext,
// LightCbamModule, CoordAttn and SplitAttn. Every tensor is NCHW float32; the small MLPs
// between these steps are functional::linear / conv2d / batch_norm calls made by the modules.
#include <cstdint>
#include <utility>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/layer_kinds.hpp"

namespace cvattn::functional {

// The gate by timm's name, elementwise on any shape: sigmoid, hard_sigmoid
// (min(max(x + 3, 0), 6) / 6, torch's Hardsigmoid) or tanh. NaN propagates.
[[nodiscard]] CVATTN_EXPORT Tensor gate(const Tensor& x, GateLayer gate);

// x [N, C, H, W] (H, W >= 1) -> [N, C]: mean over H, W, or with add_maxpool timm's
// 0.5 * mean + 0.5 * amax.
[[nodiscard]] CVATTN_EXPORT Tensor channel_pool(const Tensor& x, bool add_maxpool = false);

// y[n, c, h, w] = x[n, c, h, w] * scale[n, c] + shift[n, c] for x [N, C, H, W]; scale and
// shift are [N, C] (or [N, C, 1, 1]); either may be undefined (no multiply / no add).
[[nodiscard]] CVATTN_EXPORT Tensor scale_channels(const Tensor& x, const Tensor& scale,
                                                  const Tensor& shift = {});

// y[n, c, h, w] = x[n, c, h, w] * s[n, 0, h, w] for x [N, C, H, W], s [N, 1, H, W]; with a
// per-channel scale [N, C] (or [N, C, 1, 1]), y = (x * scale[n, c]) * s[n, 0, h, w], the two
// gates of a channel-then-spatial module in one pass.
[[nodiscard]] CVATTN_EXPORT Tensor scale_spatial(const Tensor& x, const Tensor& s,
                                                 const Tensor& scale = {});

// Elementwise a * b of two tensors of one shape.
[[nodiscard]] CVATTN_EXPORT Tensor multiply(const Tensor& a, const Tensor& b);

// LightSpatialAttn's pooling: x [N, C, H, W] (C >= 1) -> [N, 1, H, W] =
// 0.5 * mean_c v + 0.5 * amax_c v with v = x, or v = x * scale[n, c] when a per-channel scale
// [N, C] is given (the channel-gated input, never stored).
[[nodiscard]] CVATTN_EXPORT Tensor channel_mean_max_blend(const Tensor& x,
                                                          const Tensor& scale = {});

// CecaModule's conv: v [N, C] viewed as N one-channel signals of length C, padded circularly
// by p = (k - 1) / 2 on both sides (F.pad mode='circular', which requires p <= C), then
// correlated with weight [1, 1, k] (k odd) plus the optional bias [1] -> [N, C].
[[nodiscard]] CVATTN_EXPORT Tensor circular_conv1d_channels(const Tensor& v, const Tensor& weight,
                                                            const Tensor& bias = {});

// F.interpolate(x, size, mode='nearest') for x [N, C, h, w]: output pixel (oy, ox) reads
// (min(floor(oy * (h / H)), h - 1), ...) with the scale computed in float, as PyTorch does.
[[nodiscard]] CVATTN_EXPORT Tensor upsample_nearest(const Tensor& x, Pair2 size);

// y = x * upsample_nearest(g, (H, W)) for x [N, C, H, W], g [N, C, h, w], without storing the
// upsampled gate (GatherExcite's output when no map is asked for).
[[nodiscard]] CVATTN_EXPORT Tensor scale_nearest(const Tensor& x, const Tensor& g);

// GlobalContext's attention pooling: logits[n, p] = sum_c weight[c] x[n, c, p] + bias,
// a = softmax over the H*W positions p, context[n, c] = sum_p x[n, c, p] a[n, p].
// x [N, C, H, W], weight [1, C, 1, 1], bias [1] -> (context [N, C], a [N, 1, H, W]).
[[nodiscard]] CVATTN_EXPORT std::pair<Tensor, Tensor> attention_pool(const Tensor& x,
                                                                     const Tensor& weight,
                                                                     const Tensor& bias);

// CoordAttn's strip pooling: x [N, C, H, W] -> (mean over W [N, C, H], mean over H [N, C, W]).
[[nodiscard]] CVATTN_EXPORT std::pair<Tensor, Tensor> strip_pool(const Tensor& x);

// CoordAttn's output: y = (x * a_w[n, c, w]) * a_h[n, c, h] (+ x with has_skip), for
// x [N, C, H, W], a_h [N, C, H], a_w [N, C, W].
[[nodiscard]] CVATTN_EXPORT Tensor coord_scale(const Tensor& x, const Tensor& a_h,
                                               const Tensor& a_w, bool has_skip = false);

// SplitAttn's pooled splits: x [N, radix * C, H, W] -> [N, C] = mean_hw(sum_r x[n, r*C + c]).
[[nodiscard]] CVATTN_EXPORT Tensor radix_pool(const Tensor& x, std::int64_t radix);

// timm's RadixSoftmax: logits [N, radix * C] (or [N, radix * C, 1, 1]) hold, per cardinal
// group g, radix blocks of C / groups values; the result a [N, radix, C] is, for channel
// c = g * (C / groups) + j, the softmax over r of logits[n, (g * radix + r) * (C / groups) + j];
// with radix 1 it is sigmoid(logits).
[[nodiscard]] CVATTN_EXPORT Tensor radix_softmax(const Tensor& logits, std::int64_t radix,
                                                 std::int64_t groups);

// SplitAttn's output: y[n, c] = sum_r x[n, r*C + c] * a[n, r, c] for x [N, radix * C, H, W],
// a [N, radix, C].
[[nodiscard]] CVATTN_EXPORT Tensor radix_combine(const Tensor& x, const Tensor& a);

}  // namespace cvattn::functional

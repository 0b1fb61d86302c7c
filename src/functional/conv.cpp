#include "cvattn/functional/conv.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel_for.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/conv_kernels.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/window.hpp"

namespace cvattn::functional {
namespace detail {

void gemm_accumulate(const float* a, std::int64_t rows, std::int64_t k, const float* b,
                     std::int64_t ldb, std::int64_t cols, float* out, std::int64_t ldo) {
  cvattn::detail::sgemm(cvattn::detail::Trans::no, cvattn::detail::Trans::no, rows, cols, k, 1.0f,
                        a, k, b, ldb, 1.0f, out, ldo);
}

}  // namespace detail

namespace {

using detail::ceil_div;
using detail::fill_bias;
using detail::for_each_task;
using detail::gemm_accumulate;
using Geometry = detail::ConvGeometry;

// The im2col workspace of one thread holds K x chunk floats; 1 MiB keeps it near L2 while a
// chunk still has hundreds of columns for the GEMM at usual K (576 for 3x3 over 64 channels).
constexpr std::int64_t kWorkspaceBytes = std::int64_t{1} << 20;
// Narrower GEMMs waste the kernel's register blocking.
constexpr std::int64_t kMinChunk = 64;
// Winograd pays for its input/output transforms per channel and for its weight transform per
// channel pair; measured on AVX2 it wins from 8 channels per group and about 24 tiles of 2x2
// outputs per image (10x10 outputs), and loses at 7x7 outputs with 512 channels.
using detail::kWinogradMinChannels;
using detail::kWinogradMinTiles;

// 1x1, stride 1, no padding: each group's output is weight_g [Cout_g, Cin_g] times the input
// planes [Cin_g, H*W] themselves.
void conv_pointwise(const Geometry& g, const float* in, const float* wt, const float* bias,
                    float* out) {
  const std::int64_t p = g.positions();
  const std::int64_t chunk =
      detail::chunk_size(p, std::int64_t{1} << 30, g.n * g.groups, kMinChunk, 16);
  const std::int64_t chunks = ceil_div(p, chunk);
  const std::int64_t tasks = g.n * g.groups * chunks;
  detail::guarded_parallel_for(tasks, [&](std::int64_t t) {
    const std::int64_t c = t % chunks;
    const std::int64_t ng = t / chunks;
    const std::int64_t gi = ng % g.groups;
    const std::int64_t ni = ng / g.groups;
    const std::int64_t p0 = c * chunk;
    const std::int64_t cols = std::min(chunk, p - p0);
    float* o = out + (ni * g.cout + gi * g.cout_g) * p + p0;
    fill_bias(o, g.cout_g, cols, p, bias ? bias + gi * g.cout_g : nullptr);
    gemm_accumulate(wt + gi * g.cout_g * g.cin_g, g.cout_g, g.cin_g,
                    in + (ni * g.cin + gi * g.cin_g) * p + p0, p, cols, o, p);
  });
}

// One output row of a 3x3 depthwise conv from the three zero-padded input rows it reads, all
// nine taps in one pass. kDense (stride 1, dilation 1) gives GCC constant offsets to vectorise.
template <bool kDense>
void depthwise_row_3x3(const float* __restrict r0, const float* __restrict r1,
                       const float* __restrict r2, const float* k, float b, float* __restrict out,
                       std::int64_t wo, std::int64_t sw, std::int64_t dw) {
  const float k0 = k[0], k1 = k[1], k2 = k[2], k3 = k[3], k4 = k[4], k5 = k[5], k6 = k[6],
              k7 = k[7], k8 = k[8];
  const std::int64_t d = kDense ? 1 : dw;
  for (std::int64_t ox = 0; ox < wo; ++ox) {
    const std::int64_t x = kDense ? ox : ox * sw;
    out[ox] = b + k0 * r0[x] + k1 * r0[x + d] + k2 * r0[x + 2 * d] + k3 * r1[x] + k4 * r1[x + d] +
              k5 * r1[x + 2 * d] + k6 * r2[x] + k7 * r2[x + d] + k8 * r2[x + 2 * d];
  }
}

// Depthwise K x K (K = 3 or 5) with stride S = 1 or 2 in both axes and dilation 1, the
// MobileNet / EfficientNet convs: the zero-padded plane is stored as S x S phase planes
// (padded pixel (y, x) in phase (y % S, x % S) at (y / S, x / S)), each wq = ceil(wp / S) wide
// with a spare zero row. Tap (u, v) of output (oy, ox) is then phase (u % S, v % S) at
// (oy + u / S, ox + v / S): flattened over q = oy * wq + ox, every tap is one unit-stride read,
// so a whole plane of outputs (wq - wo garbage columns per row, dropped) is one long loop GCC
// vectorises, instead of short rows (7 or 14 wide) that stay in scalar epilogues.
template <int K, int S>
void depthwise_phases(const float* __restrict phases, std::int64_t phase_size, std::int64_t wq,
                      const float* __restrict k, float b, float* __restrict out,
                      std::int64_t count) {
  float kk[K * K];
  for (int i = 0; i < K * K; ++i) kk[i] = k[i];
  std::int64_t offsets[K * K];
  for (int u = 0; u < K; ++u) {
    for (int v = 0; v < K; ++v) {
      offsets[u * K + v] = ((u % S) * S + v % S) * phase_size + (u / S) * wq + v / S;
    }
  }
  for (std::int64_t q = 0; q < count; ++q) {
    float acc = b;
#pragma GCC unroll 25
    for (int t = 0; t < K * K; ++t) acc += kk[t] * phases[offsets[t] + q];
    out[q] = acc;
  }
}

bool use_depthwise_phases(const Geometry& g) {
  return g.kh == g.kw && (g.kw == 3 || g.kw == 5) && g.dh == 1 && g.dw == 1 && g.sh == g.sw &&
         (g.sw == 1 || g.sw == 2);
}

void conv_depthwise_phases(const Geometry& g, const float* in, const float* wt, const float* bias,
                           float* out) {
  const std::int64_t s = g.sw;
  const std::int64_t hq = ceil_div(g.h + 2 * g.ph, s) + 1;  // + the spare zero row
  const std::int64_t wq = ceil_div(g.w + 2 * g.pw, s);
  const std::int64_t phase_size = checked_numel({hq, wq}, "conv2d");
  const std::int64_t flat = checked_numel({g.ho, wq}, "conv2d");
  const std::int64_t planes = g.n * g.cout;
  const std::int64_t slots = detail::slot_count(planes);
  // flat = ho * wq <= phase_size: one more phase's worth holds the flattened outputs.
  const std::int64_t stride = detail::slot_stride(checked_numel({s * s + 1, phase_size}, "conv2d"));
  const cvattn::detail::Workspace scratch({slots, stride}, "conv2d (depthwise scratch)");
  float* scratch_data = scratch.data();
  const std::int64_t multiplier = g.cout_g;
  for_each_task(planes, slots, [&](std::int64_t plane, std::int64_t slot) {
    const std::int64_t o = plane % g.cout;
    const std::int64_t ni = plane / g.cout;
    const float* src = in + (ni * g.cin + o / multiplier) * g.h * g.w;
    float* phases = scratch_data + slot * stride;
    float* flat_out = phases + s * s * phase_size;
    if (s == 1) {  // one phase: the padded plane, its rows copied and only the border zeroed
      const std::int64_t wp = wq;
      std::fill(phases, phases + g.ph * wp, 0.0f);
      for (std::int64_t y = 0; y < g.h; ++y) {
        float* row = phases + (g.ph + y) * wp;
        std::fill(row, row + g.pw, 0.0f);
        std::copy(src + y * g.w, src + (y + 1) * g.w, row + g.pw);
        std::fill(row + g.pw + g.w, row + wp, 0.0f);
      }
      std::fill(phases + (g.ph + g.h) * wp, phases + phase_size, 0.0f);
    } else {
      std::fill(phases, phases + s * s * phase_size, 0.0f);
    }
    for (std::int64_t y = 0; s > 1 && y < g.h; ++y) {
      const std::int64_t py = y + g.ph;
      const float* srow = src + y * g.w;
      for (std::int64_t pc = 0; pc < s; ++pc) {
        // Columns x with (x + pw) % s == pc land in phase (py % s, pc) at (x + pw) / s.
        const std::int64_t x0 = ((pc - g.pw) % s + s) % s;
        if (x0 >= g.w) continue;
        float* __restrict d =
            phases + ((py % s) * s + pc) * phase_size + (py / s) * wq + (x0 + g.pw) / s;
        const std::int64_t count = (g.w - x0 + s - 1) / s;
        for (std::int64_t i = 0; i < count; ++i) d[i] = srow[x0 + i * s];
      }
    }
    const float* k = wt + o * g.kh * g.kw;
    const float b = bias ? bias[o] : 0.0f;
    if (g.kw == 5) {
      if (s == 1) {
        depthwise_phases<5, 1>(phases, phase_size, wq, k, b, flat_out, flat);
      } else {
        depthwise_phases<5, 2>(phases, phase_size, wq, k, b, flat_out, flat);
      }
    } else if (s == 1) {
      depthwise_phases<3, 1>(phases, phase_size, wq, k, b, flat_out, flat);
    } else {
      depthwise_phases<3, 2>(phases, phase_size, wq, k, b, flat_out, flat);
    }
    float* dst = out + plane * g.ho * g.wo;
    for (std::int64_t oy = 0; oy < g.ho; ++oy) {
      std::copy(flat_out + oy * wq, flat_out + oy * wq + g.wo, dst + oy * g.wo);
    }
  });
}

// groups == Cin: every output channel o reads one input plane (o / multiplier), so a direct
// loop over taps beats a GEMM with K = kh*kw. The plane is first copied into a zero-padded
// scratch so that no tap needs a bounds test.
void conv_depthwise(const Geometry& g, const float* in, const float* wt, const float* bias,
                    float* out) {
  const std::int64_t hp = g.h + 2 * g.ph;
  const std::int64_t wp = g.w + 2 * g.pw;
  const std::int64_t planes = g.n * g.cout;
  const std::int64_t slots = detail::slot_count(planes);
  // checked_numel: with paddings near their limit hp * wp would overflow int64.
  const std::int64_t stride = detail::slot_stride(checked_numel({hp, wp}, "conv2d"));
  // Checked against the size cap, and kept for the next call (core/workspace.hpp).
  const cvattn::detail::Workspace scratch({slots, stride}, "conv2d (depthwise scratch)");
  float* scratch_data = scratch.data();
  const std::int64_t multiplier = g.cout_g;
  const bool fused = g.kh == 3 && g.kw == 3;
  const bool dense = g.sw == 1 && g.dw == 1;
  for_each_task(planes, slots, [&](std::int64_t plane, std::int64_t slot) {
    const std::int64_t o = plane % g.cout;
    const std::int64_t ni = plane / g.cout;
    const float* src = in + (ni * g.cin + o / multiplier) * g.h * g.w;
    float* padded = scratch_data + slot * stride;
    std::fill(padded, padded + g.ph * wp, 0.0f);
    for (std::int64_t y = 0; y < g.h; ++y) {
      float* row = padded + (g.ph + y) * wp;
      std::fill(row, row + g.pw, 0.0f);
      std::copy(src + y * g.w, src + (y + 1) * g.w, row + g.pw);
      std::fill(row + g.pw + g.w, row + wp, 0.0f);
    }
    std::fill(padded + (g.ph + g.h) * wp, padded + hp * wp, 0.0f);
    const float* k = wt + o * g.kh * g.kw;
    const float b = bias ? bias[o] : 0.0f;
    float* dst = out + plane * g.ho * g.wo;
    for (std::int64_t oy = 0; oy < g.ho; ++oy) {
      float* orow = dst + oy * g.wo;
      const float* top = padded + oy * g.sh * wp;  // kernel row u reads top + u * dh * wp
      if (fused) {
        const float* r1 = top + g.dh * wp;
        const float* r2 = top + 2 * g.dh * wp;
        if (dense) {
          depthwise_row_3x3<true>(top, r1, r2, k, b, orow, g.wo, 1, 1);
        } else {
          depthwise_row_3x3<false>(top, r1, r2, k, b, orow, g.wo, g.sw, g.dw);
        }
        continue;
      }
      for (std::int64_t ox = 0; ox < g.wo; ++ox) orow[ox] = b;
      for (std::int64_t u = 0; u < g.kh; ++u) {
        const float* prow = top + u * g.dh * wp;
        for (std::int64_t v = 0; v < g.kw; ++v) {
          const float kv = k[u * g.kw + v];
          const float* s = prow + v * g.dw;
          if (g.sw == 1) {
            for (std::int64_t ox = 0; ox < g.wo; ++ox) orow[ox] += kv * s[ox];
          } else {
            for (std::int64_t ox = 0; ox < g.wo; ++ox) orow[ox] += kv * s[ox * g.sw];
          }
        }
      }
    }
  });
}

// Writes the im2col columns of output positions [p0, p0 + cols) of one group into
// ws [K, cols]: row (c, u, v) holds the input tap (c, u, v) of every position, 0 in padding.
void im2col(const Geometry& g, const float* planes, const std::vector<detail::ValidRange>& ranges,
            std::int64_t p0, std::int64_t cols, float* ws) {
  const std::int64_t oy_first = p0 / g.wo;
  const std::int64_t oy_last = (p0 + cols - 1) / g.wo;
  for (std::int64_t c = 0; c < g.cin_g; ++c) {
    const float* plane = planes + c * g.h * g.w;
    for (std::int64_t u = 0; u < g.kh; ++u) {
      for (std::int64_t v = 0; v < g.kw; ++v) {
        float* row = ws + ((c * g.kh + u) * g.kw + v) * cols;
        const auto r = ranges[static_cast<std::size_t>(v)];
        const std::int64_t off = v * g.dw - g.pw;
        for (std::int64_t oy = oy_first; oy <= oy_last; ++oy) {
          // Output columns [xb, xe) of row oy land at row[base + xb ...].
          const std::int64_t xb = std::max(p0 - oy * g.wo, std::int64_t{0});
          const std::int64_t xe = std::min(p0 + cols - oy * g.wo, g.wo);
          float* d = row + (oy * g.wo + xb - p0);
          const std::int64_t iy = oy * g.sh - g.ph + u * g.dh;
          if (!(iy >= 0 && iy < g.h)) {
            std::fill(d, d + (xe - xb), 0.0f);
            continue;
          }
          const std::int64_t lo = std::clamp(r.lo, xb, xe);
          const std::int64_t hi = std::clamp(r.hi, lo, xe);
          std::fill(d, d + (lo - xb), 0.0f);
          const float* irow = plane + iy * g.w;  // irow[ox * sw + off] is tap (u, v) of column ox
          float* dl = d + (lo - xb);
          if (g.sw == 1) {
            if (hi > lo) std::copy(irow + (lo + off), irow + (hi + off), dl);
          } else {
            for (std::int64_t ox = lo; ox < hi; ++ox) dl[ox - lo] = irow[ox * g.sw + off];
          }
          std::fill(dl + (hi - lo), d + (xe - xb), 0.0f);
        }
      }
    }
  }
}

void conv_im2col(const Geometry& g, const float* in, const float* wt, const float* bias,
                 float* out) {
  const std::int64_t k = g.k();
  const std::int64_t p = g.positions();
  const std::int64_t cap = std::max(kMinChunk, kWorkspaceBytes / (4 * k));
  const std::int64_t chunk = detail::chunk_size(p, cap, g.n * g.groups, kMinChunk, 16);
  const std::int64_t chunks = ceil_div(p, chunk);
  const std::int64_t tasks = g.n * g.groups * chunks;
  const std::int64_t slots = std::min<std::int64_t>(cvattn::detail::max_threads(), tasks);
  // Allocated (and size-checked against the cap) before the parallel region, kept for the next
  // call (core/workspace.hpp).
  const std::int64_t stride = detail::slot_stride(k * chunk);
  const cvattn::detail::Workspace workspace({slots, stride}, "conv2d (im2col scratch)");
  std::vector<detail::ValidRange> ranges(static_cast<std::size_t>(g.kw));
  for (std::int64_t v = 0; v < g.kw; ++v) {
    ranges[static_cast<std::size_t>(v)] = detail::valid_range(g.w, g.wo, g.sw, v * g.dw - g.pw);
  }
  float* ws_base = workspace.data();
  for_each_task(tasks, slots, [&](std::int64_t t, std::int64_t slot) {
    const std::int64_t c = t % chunks;
    const std::int64_t ng = t / chunks;
    const std::int64_t gi = ng % g.groups;
    const std::int64_t ni = ng / g.groups;
    const std::int64_t p0 = c * chunk;
    const std::int64_t cols = std::min(chunk, p - p0);
    float* ws = ws_base + slot * stride;
    im2col(g, in + (ni * g.cin + gi * g.cin_g) * g.h * g.w, ranges, p0, cols, ws);
    float* o = out + (ni * g.cout + gi * g.cout_g) * p + p0;
    fill_bias(o, g.cout_g, cols, p, bias ? bias + gi * g.cout_g : nullptr);
    gemm_accumulate(wt + gi * g.cout_g * k, g.cout_g, k, ws, cols, cols, o, p);
  });
}

Geometry validate(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Conv2dOptions& options) {
  constexpr const char* kWhere = "conv2d";
  check_rank(input, 4, "input", kWhere);
  check_rank(weight, 4, "weight", kWhere);
  detail::check_pair(options.stride(), 1, "stride", kWhere);
  detail::check_pair(options.padding(), 0, "padding", kWhere);
  detail::check_pair(options.dilation(), 1, "dilation", kWhere);
  const std::int64_t groups = options.groups();
  CVATTN_CHECK(groups >= 1, ValueError, kWhere, ": groups must be positive, got ", groups);
  Geometry g{};
  g.n = input.dim(0), g.cin = input.dim(1), g.h = input.dim(2), g.w = input.dim(3);
  g.cout = weight.dim(0), g.kh = weight.dim(2), g.kw = weight.dim(3);
  g.sh = options.stride().h, g.sw = options.stride().w;
  g.ph = options.padding().h, g.pw = options.padding().w;
  g.dh = options.dilation().h, g.dw = options.dilation().w;
  g.groups = groups;
  CVATTN_CHECK(g.kh > 0 && g.kw > 0, ShapeError, kWhere, ": tensor 'weight' ",
               to_string(weight.shape()), " has an empty kernel");
  CVATTN_CHECK(g.cout % groups == 0, ValueError, kWhere, ": groups (", groups,
               ") must divide the output channels of 'weight' ", to_string(weight.shape()));
  // Bounds groups first so that weight.dim(1) * groups cannot overflow.
  CVATTN_CHECK(groups <= std::max<std::int64_t>(g.cin, 1), ShapeError, kWhere, ": groups (", groups,
               ") exceeds the ", g.cin, " channels of 'input' ", to_string(input.shape()));
  CVATTN_CHECK(weight.dim(1) * groups == g.cin, ShapeError, kWhere, ": tensor 'input' expected ",
               weight.dim(1) * groups, " channels (weight ", to_string(weight.shape()),
               " with groups ", groups, "), got ", to_string(input.shape()));
  if (bias.defined()) check_shape(bias, {g.cout}, "bias", kWhere);
  g.cin_g = g.cin / groups;
  g.cout_g = g.cout / groups;
  const std::int64_t eff_h = g.dh * (g.kh - 1) + 1;
  const std::int64_t eff_w = g.dw * (g.kw - 1) + 1;
  CVATTN_CHECK(eff_h <= g.h + 2 * g.ph && eff_w <= g.w + 2 * g.pw, ShapeError, kWhere, ": kernel (",
               g.kh, ", ", g.kw, ") with dilation (", g.dh, ", ", g.dw, ") spans (", eff_h, ", ",
               eff_w, "), larger than the padded input (", g.h + 2 * g.ph, ", ", g.w + 2 * g.pw,
               ") of 'input' ", to_string(input.shape()));
  g.ho = (g.h + 2 * g.ph - eff_h) / g.sh + 1;
  g.wo = (g.w + 2 * g.pw - eff_w) / g.sw + 1;
  return g;
}

}  // namespace

namespace detail {

void conv2d_into(const Tensor& input, const Tensor& weight, const Tensor& bias,
                 const Conv2dOptions& options, float* out, const float* winograd) {
  check_defined(input, "input", "conv2d");
  const Geometry g = validate(input, weight, bias, options);
  if (g.n * g.cout * g.ho * g.wo == 0) return;
  const float* b = bias.defined() ? bias.data() : nullptr;
  if (g.k() == 0) {  // no input channels: only the bias remains
    for (std::int64_t i = 0; i < g.n; ++i) {
      fill_bias(out + i * g.cout * g.positions(), g.cout, g.positions(), g.positions(), b);
    }
    return;
  }
  if (g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0) {
    conv_pointwise(g, input.data(), weight.data(), b, out);
  } else if (g.cin_g == 1 && use_depthwise_phases(g)) {
    conv_depthwise_phases(g, input.data(), weight.data(), b, out);
  } else if (g.cin_g == 1) {
    conv_depthwise(g, input.data(), weight.data(), b, out);
  } else if (g.n > 0 && detail::use_polyphase(g)) {
    detail::conv_polyphase(g, input, weight, bias, out);
  } else if (g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
             g.cin_g >= kWinogradMinChannels && g.cout_g >= kWinogradMinChannels &&
             ceil_div(g.ho, 2) * ceil_div(g.wo, 2) >= kWinogradMinTiles) {
    detail::conv_winograd_3x3(g, input.data(), weight.data(), b, out, winograd);
  } else {
    conv_im2col(g, input.data(), weight.data(), b, out);
  }
}

}  // namespace detail

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  check_defined(input, "input", "conv2d");
  if (input.rank() == 3) {  // unbatched, as PyTorch allows
    const Tensor out =
        conv2d(input.reshape({1, input.dim(0), input.dim(1), input.dim(2)}), weight, bias, options);
    return out.reshape({out.dim(1), out.dim(2), out.dim(3)});
  }
  const Geometry g = validate(input, weight, bias, options);
  Tensor out = Tensor::empty({g.n, g.cout, g.ho, g.wo});
  detail::conv2d_into(input, weight, bias, options, out.data());
  return out;
}

Conv2dWeight::Conv2dWeight(const Tensor& weight, const Conv2dOptions& options)
    : weight_(weight), options_(options) {
  constexpr const char* kWhere = "Conv2dWeight";
  check_defined(weight, "weight", kWhere);
  check_rank(weight, 4, "weight", kWhere);
  detail::check_pair(options.stride(), 1, "stride", kWhere);
  detail::check_pair(options.padding(), 0, "padding", kWhere);
  detail::check_pair(options.dilation(), 1, "dilation", kWhere);
  const std::int64_t groups = options.groups();
  CVATTN_CHECK(groups >= 1 && weight.dim(0) % groups == 0, ValueError, kWhere, ": groups (", groups,
               ") must be positive and divide the output channels of 'weight' ",
               to_string(weight.shape()));
  Geometry g{};
  g.cout = weight.dim(0);
  g.cin_g = weight.dim(1);
  g.cout_g = g.cout / groups;
  // The input-independent half of conv2d's Winograd test (the tile count depends on the input).
  const bool winograd = weight.dim(2) == 3 && weight.dim(3) == 3 && options.stride() == Pair2(1) &&
                        options.dilation() == Pair2(1) && g.cin_g >= kWinogradMinChannels &&
                        g.cout_g >= kWinogradMinChannels;
  if (winograd) {
    winograd_ = Tensor::empty({16, g.cout, g.cin_g});
    detail::winograd_weights(g, weight.data(), winograd_.data());
  }
}

Tensor conv2d(const Tensor& input, const Conv2dWeight& weight, const Tensor& bias) {
  check_defined(input, "input", "conv2d");
  check_defined(weight.weight(), "weight", "conv2d");
  if (input.rank() == 3) {  // unbatched, as PyTorch allows
    const Tensor out =
        conv2d(input.reshape({1, input.dim(0), input.dim(1), input.dim(2)}), weight, bias);
    return out.reshape({out.dim(1), out.dim(2), out.dim(3)});
  }
  const Geometry g = validate(input, weight.weight(), bias, weight.options());
  Tensor out = Tensor::empty({g.n, g.cout, g.ho, g.wo});
  const float* u = weight.winograd().defined() ? weight.winograd().data() : nullptr;
  detail::conv2d_into(input, weight.weight(), bias, weight.options(), out.data(), u);
  return out;
}

}  // namespace cvattn::functional

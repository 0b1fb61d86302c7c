#include "cvattn/functional/gates.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/pooling.hpp"
#include "functional/detail/channel_kernels.hpp"
#include "functional/detail/elementwise_kernels.hpp"
#include "functional/detail/pool_kernels.hpp"
#include "functional/detail/softmax_axis_kernels.hpp"

namespace cvattn::functional {
namespace {

// NCHW with H, W >= 1 (the gates pool over H and W).
Tensor::Nchw pooled_input(const Tensor& x, const char* where) {
  check_rank(x, 4, "x", where);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, where,
               ": tensor 'x' expected H, W >= 1 (the gate pools over them), got ",
               to_string(x.shape()));
  return s;
}

// A per-(n, c) tensor given as [N, C] or [N, C, 1, 1].
void check_per_channel(const Tensor& t, const Tensor::Nchw& s, const char* name,
                       const char* where) {
  const bool ok =
      (t.rank() == 2 && t.dim(0) == s.n && t.dim(1) == s.c) ||
      (t.rank() == 4 && t.dim(0) == s.n && t.dim(1) == s.c && t.dim(2) == 1 && t.dim(3) == 1);
  CVATTN_CHECK(ok, ShapeError, where, ": tensor '", name, "' expected [", s.n, ", ", s.c, "] or [",
               s.n, ", ", s.c, ", 1, 1] (from 'x' [", s.n, ", ", s.c, ", ", s.h, ", ", s.w,
               "]), got ", to_string(t.shape()));
}

// Planes smaller than this per task are grouped so that a task does some real work.
constexpr std::int64_t kPlaneWork = std::int64_t{1} << 14;

// body(p0, p1) over runs of planes [p0, p1) of hw elements each, in parallel when there is
// enough work: one call per run, for kernels that take many planes at once.
template <class Body>
void for_plane_runs(std::int64_t planes, std::int64_t hw, Body&& body) {
  const std::int64_t per_task =
      std::max<std::int64_t>(1, kPlaneWork / std::max<std::int64_t>(hw, 1));
  const std::int64_t tasks = (planes + per_task - 1) / per_task;
  if (tasks <= 1) {
    if (planes > 0) body(std::int64_t{0}, planes);
    return;
  }
  cvattn::detail::parallel_for(
      tasks, [&](std::int64_t t) { body(t * per_task, std::min(planes, (t + 1) * per_task)); });
}

// Runs body(plane) for plane in [0, planes) of hw elements each, in parallel when it pays.
template <class Body>
void for_planes(std::int64_t planes, std::int64_t hw, Body&& body) {
  for_plane_runs(planes, hw, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) body(p);
  });
}

// Nearest-neighbour source index of every output position along one axis, PyTorch's rule:
// scale = (float)in / out, src = min(floor(dst * scale), in - 1).
std::vector<std::int64_t> nearest_sources(std::int64_t in, std::int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<std::int64_t> src(static_cast<std::size_t>(out));
  for (std::int64_t o = 0; o < out; ++o) {
    src[static_cast<std::size_t>(o)] =
        std::min(static_cast<std::int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
  }
  return src;
}

// dst[r * width + k] = src[row[r] * src_w + col[k]] for r < rows, k < width; a row with the same
// source row as the one above is copied.
inline void gather_nearest_rows(const float* src, std::int64_t src_w, const std::int64_t* row,
                                std::int64_t rows, const std::int64_t* col, std::int64_t width,
                                float* dst) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* out = dst + r * width;
    if (r > 0 && row[r] == row[r - 1]) {
      std::copy(out - width, out, out);
      continue;
    }
    const float* in = src + row[r] * src_w;
    for (std::int64_t k = 0; k < width; ++k) out[k] = in[col[k]];
  }
}

inline float nan_max(float a, float b) {
  // NaN-propagating maximum (torch.amax).
  return (a > b || a != a) ? a : b;
}

}  // namespace

Tensor gate(const Tensor& x, GateLayer gate) {
  switch (gate) {
    case GateLayer::tanh:
      return tanh(x);
    case GateLayer::hard_sigmoid:
      return hardsigmoid(x);
    case GateLayer::sigmoid:
      break;
  }
  return sigmoid(x);
}

Tensor channel_pool(const Tensor& x, bool add_maxpool) {
  const Tensor::Nchw s = pooled_input(x, "channel_pool");
  Tensor mean = global_avg_pool2d(x).reshape({s.n, s.c});
  if (!add_maxpool) return mean;
  const Tensor max = global_max_pool2d(x);
  for (std::int64_t i = 0; i < mean.numel(); ++i) mean[i] = 0.5f * mean[i] + 0.5f * max[i];
  return mean;
}

Tensor scale_channels(const Tensor& x, const Tensor& scale, const Tensor& shift) {
  constexpr const char* kWhere = "scale_channels";
  check_rank(x, 4, "x", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  if (scale.defined()) check_per_channel(scale, s, "scale", kWhere);
  if (shift.defined()) check_per_channel(shift, s, "shift", kWhere);
  Tensor y = Tensor::empty(x.shape());
  const std::int64_t hw = s.h * s.w;
  const float* xp = x.data();
  float* yp = y.data();
  const float* g = scale.defined() ? scale.data() : nullptr;
  const float* a = shift.defined() ? shift.data() : nullptr;
  for_plane_runs(s.n * s.c, hw, [&](std::int64_t p0, std::int64_t p1) {
    // By the dispatched plane kernels: a run of planes in one dispatch when only scaled (a
    // dispatch per 28x28 plane cost ~8 % in SE); x * 1 + a is x + a exactly, fused or not.
    if (g != nullptr && a == nullptr) {
      cvattn::detail::scale_planes(xp + p0 * hw, yp + p0 * hw, g + p0, p1 - p0, hw, false);
      return;
    }
    for (std::int64_t p = p0; p < p1; ++p) {
      cvattn::detail::affine_plane(xp + p * hw, yp + p * hw, g != nullptr ? g[p] : 1.0f,
                                   a != nullptr ? a[p] : 0.0f, nullptr, hw);
    }
  });
  return y;
}

Tensor scale_spatial(const Tensor& x, const Tensor& s, const Tensor& scale) {
  constexpr const char* kWhere = "scale_spatial";
  check_rank(x, 4, "x", kWhere);
  const Tensor::Nchw d = x.nchw("x");
  check_shape(s, {d.n, 1, d.h, d.w}, "s", kWhere);
  if (scale.defined()) check_per_channel(scale, d, "scale", kWhere);
  Tensor y = Tensor::empty(x.shape());
  const std::int64_t hw = d.h * d.w;
  const float* xp = x.data();
  const float* sp = s.data();
  const float* gp = scale.defined() ? scale.data() : nullptr;
  float* yp = y.data();
  for_planes(d.n * d.c, hw, [&](std::int64_t p) {
    const float* in = xp + p * hw;
    const float* m = sp + (p / std::max<std::int64_t>(d.c, 1)) * hw;
    // (x * g) * m, in PyTorch's order; with no scale (x * 1) * m is x * m exactly.
    cvattn::detail::scale_plane2(in, yp + p * hw, gp != nullptr ? gp[p] : 1.0f, m, hw, false);
  });
  return y;
}

Tensor multiply(const Tensor& a, const Tensor& b) {
  check_defined(a, "a", "multiply");
  check_shape(b, a.shape(), "b", "multiply");
  Tensor y = Tensor::empty(a.shape());
  const float* ap = a.data();
  const float* bp = b.data();
  float* yp = y.data();
  const std::int64_t n = a.numel();
  constexpr std::int64_t kChunk = std::int64_t{1} << 15;
  cvattn::detail::parallel_for((n + kChunk - 1) / kChunk, [&](std::int64_t t) {
    const std::int64_t end = std::min(n, (t + 1) * kChunk);
    for (std::int64_t i = t * kChunk; i < end; ++i) yp[i] = ap[i] * bp[i];
  });
  return y;
}

Tensor channel_mean_max_blend(const Tensor& x, const Tensor& scale) {
  constexpr const char* kWhere = "channel_mean_max_blend";
  check_rank(x, 4, "x", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(s.c >= 1, ShapeError, kWhere,
               ": tensor 'x' expected C >= 1 (the pooling runs over channels), got ",
               to_string(x.shape()));
  if (scale.defined()) check_per_channel(scale, s, "scale", kWhere);
  Tensor y = Tensor::empty({s.n, 1, s.h, s.w});
  const std::int64_t hw = s.h * s.w;
  const float* gp = scale.defined() ? scale.data() : nullptr;
  // Pixel blocks per task; the kernel reads each plane's block contiguously and keeps the
  // block's running sum and max in the caller's small local arrays.
  constexpr std::int64_t kBlock = 512;
  const std::int64_t blocks = (hw + kBlock - 1) / kBlock;
  const float* xp = x.data();
  float* yp = y.data();
  // Without a scale the gates are 1 (x * 1 is x exactly): one dispatched kernel for both forms,
  // CBAM's mean/max over channels (channel_kernels.hpp).
  const std::vector<float> ones(gp != nullptr ? 0 : static_cast<std::size_t>(s.c), 1.0f);
  cvattn::detail::parallel_for(s.n * blocks, [&](std::int64_t t) {
    const std::int64_t n = t / blocks, p0 = (t % blocks) * kBlock;
    const std::int64_t len = std::min(kBlock, hw - p0);
    float mean[kBlock], mx[kBlock];
    const float* g = gp != nullptr ? gp + n * s.c : ones.data();
    cvattn::detail::channel_mean_max_scaled(xp + n * s.c * hw, g, s.c, hw, p0, p0 + len, mean, mx);
    float* out = yp + n * hw + p0;
    for (std::int64_t i = 0; i < len; ++i) out[i] = 0.5f * mean[i] + 0.5f * mx[i];
  });
  return y;
}

Tensor circular_conv1d_channels(const Tensor& v, const Tensor& weight, const Tensor& bias) {
  constexpr const char* kWhere = "circular_conv1d_channels";
  check_rank(v, 2, "v", kWhere);
  check_shape(weight, {1, 1, kAny}, "weight", kWhere);
  const std::int64_t n = v.dim(0), c = v.dim(1), k = weight.dim(2);
  CVATTN_CHECK(k >= 1 && k % 2 == 1, ShapeError, kWhere,
               ": tensor 'weight' expected an odd kernel size (padding (k - 1) / 2 keeps the "
               "length C), got ",
               to_string(weight.shape()));
  const std::int64_t pad = (k - 1) / 2;
  CVATTN_CHECK(pad <= c, ShapeError, kWhere, ": circular padding ", pad, " (kernel size ", k,
               ") exceeds the ", c, " channels of 'v' ", to_string(v.shape()),
               " (F.pad mode='circular' wraps around at most once)");
  if (bias.defined()) check_shape(bias, {1}, "bias", kWhere);
  Tensor y = Tensor::empty({n, c});
  const float* w = weight.data();
  const float b = bias.defined() ? bias[0] : 0.0f;
  const bool has_bias = bias.defined();
  for (std::int64_t i = 0; i < n; ++i) {
    const float* in = v.data() + i * c;
    float* out = y.data() + i * c;
    for (std::int64_t j = 0; j < c; ++j) {
      float acc = 0.0f;
      for (std::int64_t t = 0; t < k; ++t) {
        std::int64_t src = j + t - pad;
        if (src < 0) src += c;
        if (src >= c) src -= c;
        acc += w[t] * in[src];
      }
      out[j] = has_bias ? acc + b : acc;
    }
  }
  return y;
}

Tensor upsample_nearest(const Tensor& x, Pair2 size) {
  constexpr const char* kWhere = "upsample_nearest";
  check_rank(x, 4, "x", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(size.h >= 1 && size.w >= 1, ValueError, kWhere, ": size must be positive, got (",
               size.h, ", ", size.w, ")");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, kWhere, ": tensor 'x' expected H, W >= 1, got ",
               to_string(x.shape()));
  Tensor y = Tensor::empty({s.n, s.c, size.h, size.w});
  const std::vector<std::int64_t> row = nearest_sources(s.h, size.h);
  const std::vector<std::int64_t> col = nearest_sources(s.w, size.w);
  const float* xp = x.data();
  float* yp = y.data();
  const std::int64_t out_hw = size.h * size.w;
  if (s.h == 1 && s.w == 1) {  // a channel gate broadcast to the image
    // By the dispatched kernel (x * 1 keeps every value, -0 included): a store-bound fill, which
    // std::fill does with 16-byte stores in a portable build; one dispatch per run of planes
    // (one per plane cost 8 % at 28x28).
    const std::int64_t planes = s.n * s.c;
    std::vector<std::int64_t> value(static_cast<std::size_t>(planes)), none(value.size(), 0);
    for (std::int64_t p = 0; p < planes; ++p) value[static_cast<std::size_t>(p)] = p;
    const float one = 1.0f;
    for_plane_runs(planes, out_hw, [&](std::int64_t p0, std::int64_t p1) {
      cvattn::detail::binary_rows(cvattn::detail::BinaryOp::mul, xp, value.data() + p0, 0, &one,
                                  none.data() + p0, 0, yp + p0 * out_hw, out_hw, p1 - p0);
    });
    return y;
  }
  for_planes(s.n * s.c, out_hw, [&](std::int64_t p) {
    gather_nearest_rows(xp + p * s.h * s.w, s.w, row.data(), size.h, col.data(), size.w,
                        yp + p * out_hw);
  });
  return y;
}

Tensor scale_nearest(const Tensor& x, const Tensor& g) {
  constexpr const char* kWhere = "scale_nearest";
  check_rank(x, 4, "x", kWhere);
  check_rank(g, 4, "g", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  const Tensor::Nchw t = g.nchw("g");
  CVATTN_CHECK(t.n == s.n && t.c == s.c && t.h >= 1 && t.w >= 1, ShapeError, kWhere,
               ": tensor 'g' expected [", s.n, ", ", s.c, ", h, w] with h, w >= 1 (from 'x' ",
               to_string(x.shape()), "), got ", to_string(g.shape()));
  Tensor y = Tensor::empty(x.shape());
  // The same source indices as upsample_nearest.
  const std::vector<std::int64_t> row = nearest_sources(t.h, s.h);
  const std::vector<std::int64_t> col = nearest_sources(t.w, s.w);
  const float* xp = x.data();
  const float* gp = g.data();
  float* yp = y.data();
  const std::int64_t hw = s.h * s.w;
  // The gate is spread (as upsample_nearest does) over a block of the output in a buffer, and x
  // is multiplied by it with the dispatched scale_plane2 ((x * 1) * g is x * g exactly): the
  // gather-and-multiply loop stayed scalar, with spills, in the portable build (half of
  // GatherExcite with extent 4: 1.28x a -march=znver1 build's time at AVX2; docs/performance.md).
  // A block is whole rows, or part of one row when a row is longer than the buffer, so that its
  // pixels are contiguous in x and y.
  constexpr std::int64_t kBuffer = 4096;
  const std::int64_t width = std::min(s.w, kBuffer);
  const std::int64_t rows_per_block = kBuffer / width;  // > 1 only when width == s.w
  for_planes(s.n * s.c, hw, [&](std::int64_t p) {
    const float* gate = gp + p * t.h * t.w;
    float spread[kBuffer];
    for (std::int64_t oy = 0; oy < s.h; oy += rows_per_block) {
      const std::int64_t rows = std::min(rows_per_block, s.h - oy);
      for (std::int64_t ox = 0; ox < s.w; ox += width) {
        const std::int64_t n = std::min(width, s.w - ox);
        gather_nearest_rows(gate, t.w, row.data() + oy, rows, col.data() + ox, n, spread);
        const std::int64_t at = p * hw + oy * s.w + ox;
        cvattn::detail::scale_plane2(xp + at, yp + at, 1.0f, spread, rows * n, false);
      }
    }
  });
  return y;
}

std::pair<Tensor, Tensor> attention_pool(const Tensor& x, const Tensor& weight,
                                         const Tensor& bias) {
  constexpr const char* kWhere = "attention_pool";
  const Tensor::Nchw s = pooled_input(x, kWhere);
  check_shape(weight, {1, s.c, 1, 1}, "weight", kWhere);
  check_shape(bias, {1}, "bias", kWhere);
  const std::int64_t hw = s.h * s.w;
  Tensor context = Tensor::empty({s.n, s.c});
  Tensor attn = Tensor::empty({s.n, 1, s.h, s.w});
  const float* xp = x.data();
  const float* w = weight.data();
  const float b = bias[0];
  float* cp = context.data();
  float* ap = attn.data();
  Tensor logits = Tensor::empty({s.n, hw});  // softmax_row_exact writes out of place
  float* lp = logits.data();
  cvattn::detail::parallel_for(s.n, [&](std::int64_t n) {
    const float* xn = xp + n * s.c * hw;
    float* l = lp + n * hw;
    float* a = ap + n * hw;
    // Logits: a 1x1 conv to one channel, the channels added in order (one dispatched pass).
    cvattn::detail::weighted_sum_rows(xn, s.c, hw, w, l, hw);
    for (std::int64_t p = 0; p < hw; ++p) l[p] += b;
    // The public softmax's kernel: a NaN or +inf logit, or every logit -inf, gives the NaN row
    // of torch.softmax.
    cvattn::detail::softmax_row_exact(l, a, hw, false);
    // context[c] = sum_p x[c, p] a[p] (a bmm in PyTorch), in double.
    cvattn::detail::dot_rows(xn, s.c, hw, a, nullptr, cp + n * s.c);
  });
  return {context, attn};
}

std::pair<Tensor, Tensor> strip_pool(const Tensor& x) {
  constexpr const char* kWhere = "strip_pool";
  const Tensor::Nchw s = pooled_input(x, kWhere);
  Tensor xh = Tensor::empty({s.n, s.c, s.h});
  Tensor xw = Tensor::empty({s.n, s.c, s.w});
  const std::int64_t hw = s.h * s.w;
  const float* xp = x.data();
  float* hp = xh.data();
  float* wp = xw.data();
  for_planes(s.n * s.c, hw, [&](std::int64_t p) {
    const float* in = xp + p * hw;
    float* rows = hp + p * s.h;
    float* cols = wp + p * s.w;
    functional::detail::row_column_means(in, s.h, s.w, rows, cols);
  });
  return {xh, xw};
}

Tensor coord_scale(const Tensor& x, const Tensor& a_h, const Tensor& a_w, bool has_skip) {
  constexpr const char* kWhere = "coord_scale";
  check_rank(x, 4, "x", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  check_shape(a_h, {s.n, s.c, s.h}, "a_h", kWhere);
  check_shape(a_w, {s.n, s.c, s.w}, "a_w", kWhere);
  Tensor y = Tensor::empty(x.shape());
  const std::int64_t hw = s.h * s.w;
  const float* xp = x.data();
  const float* hp = a_h.data();
  const float* wp = a_w.data();
  float* yp = y.data();
  for_planes(s.n * s.c, hw, [&](std::int64_t p) {
    const float* in = xp + p * hw;
    const float* ah = hp + p * s.h;
    const float* aw = wp + p * s.w;
    float* out = yp + p * hw;
    for (std::int64_t r = 0; r < s.h; ++r) {
      const float g = ah[r];
      const float* row = in + r * s.w;
      float* o = out + r * s.w;
      if (has_skip) {
        for (std::int64_t i = 0; i < s.w; ++i) o[i] = (row[i] * aw[i]) * g + row[i];
      } else {
        for (std::int64_t i = 0; i < s.w; ++i) o[i] = (row[i] * aw[i]) * g;
      }
    }
  });
  return y;
}

Tensor radix_pool(const Tensor& x, std::int64_t radix) {
  constexpr const char* kWhere = "radix_pool";
  const Tensor::Nchw s = pooled_input(x, kWhere);
  CVATTN_CHECK(radix >= 1 && s.c % radix == 0, ShapeError, kWhere,
               ": tensor 'x' expected a channel count divisible by radix ", radix, ", got ",
               to_string(x.shape()));
  const std::int64_t c = s.c / radix, hw = s.h * s.w;
  Tensor y = Tensor::empty({s.n, c});
  const float* xp = x.data();
  float* yp = y.data();
  for_planes(s.n * c, hw * radix, [&](std::int64_t p) {
    const std::int64_t n = p / c, j = p % c;
    const float* base = xp + (n * s.c + j) * hw;
    double acc = 0.0;
    for (std::int64_t i = 0; i < hw; ++i) {
      float v = base[i];  // sum over the splits first, in float, as x.sum(dim=1)
      for (std::int64_t r = 1; r < radix; ++r) v += base[r * c * hw + i];
      acc += v;
    }
    yp[p] = static_cast<float>(acc / static_cast<double>(hw));
  });
  return y;
}

Tensor radix_softmax(const Tensor& logits, std::int64_t radix, std::int64_t groups) {
  constexpr const char* kWhere = "radix_softmax";
  check_defined(logits, "logits", kWhere);
  const bool flat = logits.rank() == 2;
  const bool col = logits.rank() == 4 && logits.dim(2) == 1 && logits.dim(3) == 1;
  CVATTN_CHECK(flat || col, ShapeError, kWhere,
               ": tensor 'logits' expected [N, radix * C] or [N, radix * C, 1, 1], got ",
               to_string(logits.shape()));
  CVATTN_CHECK(radix >= 1 && groups >= 1, ValueError, kWhere,
               ": radix and groups must be >= 1, got radix=", radix, ", groups=", groups);
  const std::int64_t n = logits.dim(0), total = logits.dim(1);
  CVATTN_CHECK(total % (radix * groups) == 0, ShapeError, kWhere, ": tensor 'logits' ",
               to_string(logits.shape()),
               " expected a channel count divisible by radix * groups = ", radix * groups);
  const std::int64_t c = total / radix, per = c / groups;
  Tensor a = Tensor::empty({n, radix, c});
  const float* lp = logits.data();
  float* ap = a.data();
  for (std::int64_t i = 0; i < n; ++i) {
    const float* l = lp + i * total;
    float* out = ap + i * total;
    for (std::int64_t g = 0; g < groups; ++g) {
      for (std::int64_t j = 0; j < per; ++j) {
        const std::int64_t ch = g * per + j;
        if (radix == 1) {
          out[ch] = 1.0f / (1.0f + std::exp(-l[ch]));
          continue;
        }
        float m = -std::numeric_limits<float>::infinity();
        for (std::int64_t r = 0; r < radix; ++r) m = nan_max(m, l[(g * radix + r) * per + j]);
        float sum = 0.0f;
        for (std::int64_t r = 0; r < radix; ++r) {
          const float e = std::exp(l[(g * radix + r) * per + j] - m);
          out[r * c + ch] = e;
          sum += e;
        }
        for (std::int64_t r = 0; r < radix; ++r) out[r * c + ch] /= sum;
      }
    }
  }
  return a;
}

Tensor radix_combine(const Tensor& x, const Tensor& a) {
  constexpr const char* kWhere = "radix_combine";
  check_rank(x, 4, "x", kWhere);
  check_rank(a, 3, "a", kWhere);
  const Tensor::Nchw s = x.nchw("x");
  const std::int64_t radix = a.dim(1), c = a.dim(2);
  CVATTN_CHECK(a.dim(0) == s.n && radix * c == s.c, ShapeError, kWhere, ": tensor 'a' ",
               to_string(a.shape()), " expected [N, radix, C] with radix * C = ", s.c,
               " and N = ", s.n, " (from 'x' ", to_string(x.shape()), ")");
  const std::int64_t hw = s.h * s.w;
  Tensor y = Tensor::empty({s.n, c, s.h, s.w});
  const float* xp = x.data();
  const float* att = a.data();
  float* yp = y.data();
  for_planes(s.n * c, hw * radix, [&](std::int64_t p) {
    const std::int64_t n = p / c, j = p % c;
    const float* base = xp + (n * s.c + j) * hw;
    const float* an = att + n * radix * c + j;
    float* out = yp + p * hw;
    const float a0 = an[0];
    for (std::int64_t i = 0; i < hw; ++i) out[i] = base[i] * a0;
    for (std::int64_t r = 1; r < radix; ++r) {
      const float ar = an[r * c];
      const float* split = base + r * c * hw;
      for (std::int64_t i = 0; i < hw; ++i) out[i] += split[i] * ar;
    }
  });
  return y;
}

}  // namespace cvattn::functional

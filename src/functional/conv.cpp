#include "cvattn/functional/conv.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "core/parallel_for.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/activation_kernels.hpp"
#include "functional/detail/conv_kernels.hpp"
#include "functional/detail/depthwise_kernels.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/pointwise_kernels.hpp"
#include "functional/detail/window.hpp"

namespace cvattn::functional {
namespace detail {

void gemm_accumulate(const float* a, std::int64_t rows, std::int64_t k, const float* b,
                     std::int64_t ldb, std::int64_t cols, float* out, std::int64_t ldo,
                     const cvattn::detail::PackedA* packed) {
  using cvattn::detail::Trans;
  if (packed != nullptr) {
    cvattn::detail::sgemm_prepacked(*packed, Trans::no, Trans::no, rows, cols, k, 1.0f, a, k, b,
                                    ldb, 1.0f, out, ldo);
  } else {
    cvattn::detail::sgemm(Trans::no, Trans::no, rows, cols, k, 1.0f, a, k, b, ldb, 1.0f, out, ldo);
  }
}

void act_block(ActLayer act, float* out, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  if (act == ActLayer::identity) return;
  for (std::int64_t r = 0; r < rows; ++r) {
    cvattn::detail::activation_kernel(act, out + r * ld, out + r * ld, cols);
  }
}

}  // namespace detail

namespace {

using detail::act_block;
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
// planes [Cin_g, H*W] themselves. With few input channels one kernel writes each output once
// (bias, products, activation); with more, the GEMM over a bias fill, then the activation.
void conv_pointwise(const Geometry& g, const float* in, const float* wt, const float* bias,
                    float* out, const detail::PreparedWeights& prepared, ActLayer act) {
  const std::int64_t p = g.positions();
  const std::int64_t chunk =
      detail::chunk_size(p, std::int64_t{1} << 30, g.n * g.groups, kMinChunk, 16);
  const std::int64_t chunks = ceil_div(p, chunk);
  const std::int64_t tasks = g.n * g.groups * chunks;
  const bool direct = g.cin_g <= detail::pointwise_preferred_max_k();
  detail::guarded_parallel_for(tasks, [&](std::int64_t t) {
    const std::int64_t c = t % chunks;
    const std::int64_t ng = t / chunks;
    const std::int64_t gi = ng % g.groups;
    const std::int64_t ni = ng / g.groups;
    const std::int64_t p0 = c * chunk;
    const std::int64_t cols = std::min(chunk, p - p0);
    float* o = out + (ni * g.cout + gi * g.cout_g) * p + p0;
    const float* x = in + (ni * g.cin + gi * g.cin_g) * p + p0;
    const float* w = wt + gi * g.cout_g * g.cin_g;
    const float* b = bias ? bias + gi * g.cout_g : nullptr;
    if (direct) {  // each output written once (pointwise_kernels.hpp)
      detail::pointwise_act(act, w, g.cout_g, g.cin_g, x, p, cols, b, o, p);
      return;
    }
    fill_bias(o, g.cout_g, cols, p, b);
    gemm_accumulate(w, g.cout_g, g.cin_g, x, p, cols, o, p,
                    prepared.gemm_group(gi, g.cout_g, cols, g.cin_g));
    act_block(act, o, g.cout_g, cols, p);
  });
}

// groups == Cin: every output channel o reads one input plane (o / multiplier), so a direct
// loop over taps beats a GEMM with K = kh*kw. Each plane is split into its zero-padded stride
// phases (depthwise_kernels.hpp), where every tap is a unit-stride read, and the tap kernel
// writes the output plane from them; a slot keeps its split while its planes share the input.
void conv_depthwise(const Geometry& g, const float* in, const float* wt, const float* bias,
                    float* out, ActLayer act) {
  const detail::DepthwiseLayout layout = detail::depthwise_layout(g);
  const std::vector<std::int64_t> offsets = detail::depthwise_offsets(g, layout);
  const std::int64_t planes = g.n * g.cout;
  const std::int64_t slots = detail::slot_count(planes);
  const std::int64_t stride = detail::slot_stride(layout.plane_floats() + detail::kDepthwiseSlack);
  // Checked against the size cap, and kept for the next call (core/workspace.hpp).
  const cvattn::detail::Workspace scratch({slots, stride}, "conv2d (depthwise scratch)");
  float* scratch_data = scratch.data();
  const std::int64_t multiplier = g.cout_g;
  const std::int64_t taps = g.kh * g.kw;
  std::vector<const float*> split(static_cast<std::size_t>(slots), nullptr);  // per slot
  for_each_task(planes, slots, [&](std::int64_t plane, std::int64_t slot) {
    const std::int64_t o = plane % g.cout;
    const std::int64_t ni = plane / g.cout;
    const float* src = in + (ni * g.cin + o / multiplier) * g.h * g.w;
    float* phases = scratch_data + slot * stride;
    if (split[static_cast<std::size_t>(slot)] != src) {
      detail::depthwise_split(layout, src, phases);
      split[static_cast<std::size_t>(slot)] = src;
    }
    detail::depthwise_taps(layout, offsets.data(), taps, wt + o * taps, bias ? bias[o] : 0.0f,
                           phases, out + plane * g.ho * g.wo, 0, g.ho);
    act_block(act, out + plane * g.ho * g.wo, 1, g.ho * g.wo, 0);
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
          if (g.sw == 2) {
            // The whole rows from here whose input row exists, in one dispatched call.
            std::int64_t n = 0;
            while (oy + n <= oy_last && (oy + n) * g.wo >= p0 && (oy + n + 1) * g.wo <= p0 + cols &&
                   iy + n * g.sh >= 0 && iy + n * g.sh < g.h) {
              ++n;
            }
            if (n > 0) {
              const std::int64_t lo = std::clamp(r.lo, std::int64_t{0}, g.wo);
              detail::im2col_stride2_rows(plane + iy * g.w, g.sh * g.w, d, g.wo, lo,
                                          std::clamp(r.hi, lo, g.wo), g.wo, off, n);
              oy += n - 1;
              continue;
            }
          }
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
          } else if (g.sw == 2) {
            if (hi > lo) detail::gather_stride2(irow + (lo * 2 + off), dl, hi - lo);
          } else {
            for (std::int64_t ox = lo; ox < hi; ++ox) dl[ox - lo] = irow[ox * g.sw + off];
          }
          std::fill(dl + (hi - lo), d + (xe - xb), 0.0f);
        }
      }
    }
  }
}

void conv_im2col(const Geometry& g, const float* in, const float* wt, const float* bias, float* out,
                 const detail::PreparedWeights& prepared, ActLayer act) {
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
    gemm_accumulate(wt + gi * g.cout_g * k, g.cout_g, k, ws, cols, cols, o, p,
                    prepared.gemm_group(gi, g.cout_g, cols, k));
    act_block(act, o, g.cout_g, cols, p);
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

// The input-independent half of conv2d's Winograd test (the tile count depends on the input).
bool winograd_kernel(const Geometry& g) {
  return g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
         g.cin_g >= kWinogradMinChannels && g.cout_g >= kWinogradMinChannels;
}

}  // namespace

namespace detail {

void conv2d_into(const Tensor& input, const Tensor& weight, const Tensor& bias,
                 const Conv2dOptions& options, float* out, const detail::PreparedWeights& prepared,
                 ActLayer act) {
  check_defined(input, "input", "conv2d");
  const Geometry g = validate(input, weight, bias, options);
  if (g.n * g.cout * g.ho * g.wo == 0) return;
  const float* b = bias.defined() ? bias.data() : nullptr;
  if (g.k() == 0) {  // no input channels: only the bias remains
    for (std::int64_t i = 0; i < g.n; ++i) {
      fill_bias(out + i * g.cout * g.positions(), g.cout, g.positions(), g.positions(), b);
    }
    act_block(act, out, 1, g.n * g.cout * g.positions(), 0);
    return;
  }
  if (g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0) {
    conv_pointwise(g, input.data(), weight.data(), b, out, prepared, act);
  } else if (g.cin_g == 1) {
    conv_depthwise(g, input.data(), weight.data(), b, out, act);
  } else if (g.n > 0 && detail::use_polyphase(g)) {
    detail::conv_polyphase(g, input, weight, bias, out, prepared, act);
  } else if (winograd_kernel(g) && ceil_div(g.ho, 2) * ceil_div(g.wo, 2) >= kWinogradMinTiles) {
    detail::conv_winograd_3x3(g, input.data(), weight.data(), b, out, prepared, act);
  } else {
    conv_im2col(g, input.data(), weight.data(), b, out, prepared, act);
  }
}

}  // namespace detail

namespace {

// conv2d with the kernel's prepared Winograd transforms u, if any.
Tensor conv2d_with(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Conv2dOptions& options, const detail::PreparedWeights& u, ActLayer act) {
  check_defined(input, "input", "conv2d");
  if (input.rank() == 3) {  // unbatched, as PyTorch allows
    const Tensor out = conv2d_with(input.reshape({1, input.dim(0), input.dim(1), input.dim(2)}),
                                   weight, bias, options, u, act);
    return out.reshape({out.dim(1), out.dim(2), out.dim(3)});
  }
  const Geometry g = validate(input, weight, bias, options);
  Tensor out = Tensor::empty({g.n, g.cout, g.ho, g.wo});
  detail::conv2d_into(input, weight, bias, options, out.data(), u, act);
  return out;
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  return conv2d_with(input, weight, bias, options, {}, ActLayer::identity);
}

namespace {

// The sizes of a Conv2dWeight's kernel that its transforms and packing read.
Geometry kernel_geometry(const Tensor& weight, const Conv2dOptions& options) {
  Geometry g{};
  g.groups = options.groups();
  g.cout = weight.dim(0), g.cin_g = weight.dim(1), g.cout_g = g.cout / g.groups;
  g.kh = weight.dim(2), g.kw = weight.dim(3);
  return g;
}

}  // namespace

struct Conv2dWeight::Lazy {
  std::once_flag u22_once, u43_once, gemm_once, gemm_t_once, u43_panels_once;
  Tensor u22, u43;
  // Empty where the product is not cvattn's own. gemm_t: the form for products computed as
  // their transpose (few output positions).
  std::vector<cvattn::detail::PackedA> gemm, gemm_t, u43_panels;
};

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
  Geometry g = kernel_geometry(weight, options);
  g.sh = options.stride().h, g.sw = options.stride().w;
  g.dh = options.dilation().h, g.dw = options.dilation().w;
  // Winograd transforms for 3x3 kernels of dilation 1, and for the dilated ones that conv2d splits
  // into sub-images (their convs are of dilation 1, with the same weight).
  g.ph = options.padding().h, g.pw = options.padding().w;
  winograd_ok_ = winograd_kernel(g) || detail::polyphase_kernel(g);
  if (winograd_ok_) winograd_scale_ = detail::winograd_weight_scale(g, weight.data());
  lazy_ = std::make_shared<Lazy>();
}

namespace {

const Tensor& no_tensor() {
  static const Tensor none;
  return none;
}

// u, made once by transform(g, weight, u) into [positions, Cout, Cin/groups].
const Tensor& made_once(std::once_flag& once, Tensor& u, std::int64_t positions,
                        const Tensor& weight, const Conv2dOptions& options,
                        void (*transform)(const Geometry&, const float*, float*)) {
  std::call_once(once, [&] {
    const Geometry g = kernel_geometry(weight, options);
    Tensor made = Tensor::empty({positions, g.cout, g.cin_g});
    transform(g, weight.data(), made.data());
    u = std::move(made);
  });
  return u;
}

// `count` dense [m, k] blocks back to back from `base`, each packed for the product; empty where
// the product is not cvattn's own.
std::vector<cvattn::detail::PackedA> pack_each(
    std::int64_t count, std::int64_t m, std::int64_t k, const float* base,
    cvattn::detail::PackedA::Form form = cvattn::detail::PackedA::Form::rows) {
  std::vector<cvattn::detail::PackedA> packed;
  packed.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    packed.emplace_back(cvattn::detail::Trans::no, m, k, base + i * m * k, k, form);
  }
  if (packed.empty() || packed.front().empty()) packed.clear();
  return packed;
}

}  // namespace

const Tensor& Conv2dWeight::winograd() const {
  if (!winograd_ok_ || !lazy_) return no_tensor();
  return made_once(lazy_->u22_once, lazy_->u22, 16, weight_, options_, detail::winograd_weights);
}

const Tensor& Conv2dWeight::winograd43() const {
  if (!winograd_ok_ || !lazy_) return no_tensor();
  return made_once(lazy_->u43_once, lazy_->u43, 36, weight_, options_, detail::winograd43_weights);
}

const std::vector<cvattn::detail::PackedA>* Conv2dWeight::winograd43_panels() const {
  if (!winograd_ok_ || !lazy_) return nullptr;
  std::call_once(lazy_->u43_panels_once, [&] {
    const Geometry g = kernel_geometry(weight_, options_);
    // The transform is made here and dropped: only the packed copy is kept. Its [Cout_g, Cin_g]
    // blocks, position-major then group, lie back to back.
    Tensor u = Tensor::empty({36, g.cout, g.cin_g});
    detail::winograd43_weights(g, weight_.data(), u.data());
    lazy_->u43_panels = pack_each(36 * g.groups, g.cout_g, g.cin_g, u.data());
  });
  return lazy_->u43_panels.empty() ? nullptr : &lazy_->u43_panels;
}

const std::vector<cvattn::detail::PackedA>* Conv2dWeight::gemm_panels(bool transposed) const {
  if (!lazy_ || weight_.numel() == 0) return nullptr;
  using Form = cvattn::detail::PackedA::Form;
  auto& panels = transposed ? lazy_->gemm_t : lazy_->gemm;
  std::call_once(transposed ? lazy_->gemm_t_once : lazy_->gemm_once, [&] {
    // Each group's [Cout_g, K] weight, as the im2col and wide 1x1 paths multiply with it.
    const Geometry g = kernel_geometry(weight_, options_);
    panels = pack_each(g.groups, g.cout_g, g.cin_g * g.kh * g.kw, weight_.data(),
                       transposed ? Form::transposed : Form::rows);
  });
  return panels.empty() ? nullptr : &panels;
}

Tensor conv2d(const Tensor& input, const Conv2dWeight& weight, const Tensor& bias, ActLayer act) {
  check_defined(weight.weight(), "weight", "conv2d");
  return conv2d_with(input, weight.weight(), bias, weight.options(), {&weight}, act);
}

}  // namespace cvattn::functional

// deform_conv2d (docs/modules.md §10.1) as a deformable im2col feeding a GEMM.
//
// Layout of the work. A round of images is first copied channels-last ([H*W + 1, Cin] per image,
// the extra pixel all zeros), so that one bilinear sample of one offset group is four contiguous
// channel vectors: building the column of a (pixel, tap) is then an axpy over channels with no
// gathers. The taps (corner pixels and mask-scaled weights) of a chunk of output pixels are
// computed once per (offset group, kernel tap) and reused for all of the group's channels; a
// corner outside the image points at the zero pixel, so no per-channel test remains. Columns are
// stored [pixel, (tap, channel)]; a register-blocked kernel multiplies them by the weight packed in
// panels of 16 output channels [panel, (tap, channel), 16], broadcasting one column entry per
// pixel against two vectors of output channels. Each thread owns one column block of about
// kSlotBytes; all blocks together stay under kDeformConvWorkspaceCap whatever the input.
//
// This file is the validation, the work plan and the runtime SIMD dispatch (core/dispatch.hpp);
// the per-target kernels are in deform_conv-inl.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/deform_conv-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/deform_conv-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/dispatch.hpp"
#include "core/parallel_for.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/deform_conv.hpp"
#include "functional/detail/conv_kernels.hpp"
#include "functional/detail/deform_conv_parts.hpp"
#include "functional/detail/tasks.hpp"
#include "functional/detail/window.hpp"

namespace cvattn::detail {

HWY_EXPORT(DeformComputeTaps);
HWY_EXPORT(DeformScatterSamples);
HWY_EXPORT(DeformChannelsLastTile);
HWY_EXPORT(DeformGemmPanels);

namespace {

// The kernels of the target in use, chosen once per call.
struct DeformKernels {
  void (*taps)(const DeformGeometry&, const DeformBaseGrid&, const float*, const float*,
               std::int64_t, std::int64_t, std::int64_t, std::int64_t, const DeformTapBlock&);
  void (*scatter)(const DeformTapBlock&, std::int64_t, const float*, std::int64_t, std::int64_t,
                  float*, std::int64_t);
  void (*channels_last)(const float*, float*, std::int64_t, std::int64_t, std::int64_t,
                        std::int64_t);
  void (*gemm)(const float*, std::int64_t, std::int64_t, const float*, std::int64_t, std::int64_t,
               float*, std::int64_t, const float*);
};

DeformKernels deform_kernels() {
  return {CVATTN_DISPATCH(DeformComputeTaps), CVATTN_DISPATCH(DeformScatterSamples),
          CVATTN_DISPATCH(DeformChannelsLastTile), CVATTN_DISPATCH(DeformGemmPanels)};
}

}  // namespace
}  // namespace cvattn::detail

namespace cvattn::functional {
namespace {

using detail::ceil_div;

constexpr const char* kWhere = "deform_conv2d";
// Column block per thread: small enough to stay in L2 between being written and being read by the
// GEMM, large enough for about a hundred pixels at the usual 3x3x64 reduction.
constexpr std::int64_t kSlotBytes = std::int64_t{256} << 10;
// Fewer pixels per GEMM waste its register blocking; a deeper reduction is split instead.
constexpr std::int64_t kMinCols = 32;
// Channels-last copies made at once: several small images share one parallel region.
constexpr std::int64_t kRoundBytes = std::int64_t{16} << 20;
constexpr std::int64_t kPanel = cvattn::detail::kDeformPanel;
constexpr int kTileRows = cvattn::detail::kDeformTileRows;
using Geometry = cvattn::detail::DeformGeometry;
using TapBlock = cvattn::detail::DeformTapBlock;
using BaseGrid = cvattn::detail::DeformBaseGrid;

// How the work of one call is cut: pixels per chunk, reduction columns per GEMM, images per round.
struct Plan {
  std::int64_t cols;   // output pixels per chunk
  std::int64_t r_blk;  // reduction length per column block
  std::int64_t round;  // images copied channels-last at once
};

Plan make_plan(const Geometry& g) {
  const std::int64_t threads = std::max(1, cvattn::detail::max_threads());
  const std::int64_t slot_floats =
      std::max<std::int64_t>(1, std::min(kSlotBytes, kDeformConvWorkspaceCap / threads) / 4);
  Plan plan{};
  const std::int64_t r = g.reduction();
  plan.r_blk = std::min(r, std::max<std::int64_t>(1, slot_floats / kMinCols));
  const std::int64_t p = g.positions();
  plan.cols = std::min(p, std::max<std::int64_t>(1, slot_floats / plan.r_blk));
  const std::int64_t image_bytes = (g.h * g.w + 1) * g.cin * 4;
  plan.round =
      std::clamp<std::int64_t>(kRoundBytes / std::max<std::int64_t>(image_bytes, 1), 1, g.n);
  // Enough tasks for every thread (only ever shrinks the chunk, so the cap still holds).
  const std::int64_t wanted = detail::kTasksPerThread * threads;
  if (threads > 1 && plan.round * ceil_div(p, plan.cols) < wanted) {
    const std::int64_t per_image = ceil_div(wanted, plan.round);
    plan.cols =
        std::min(plan.cols, std::max(std::min(plan.cols, kMinCols), ceil_div(p, per_image)));
  }
  // Whole register tiles: a partial tile runs the GEMM kernel below its peak.
  if (plan.cols > kTileRows) plan.cols -= plan.cols % kTileRows;
  return plan;
}

// Channels-last copy of images [C, H*W] -> [H*W + 1, C], the last pixel zero, in tiles of
// kTile pixels.
void to_channels_last(const Geometry& g, const cvattn::detail::DeformKernels& kernels,
                      const float* in, std::int64_t images, float* out) {
  constexpr std::int64_t kTile = 32;
  const std::int64_t hw = g.h * g.w;
  const std::int64_t cin = g.cin;
  const std::int64_t tiles = ceil_div(hw + 1, kTile);
  // Handed out dynamically like the pixel chunks of deform_conv2d, for the same reason.
  const std::int64_t tasks = images * tiles;
  detail::for_each_task_dynamic(tasks, detail::slot_count(tasks), [&](std::int64_t t, auto) {
    const std::int64_t img = t / tiles;
    const std::int64_t p0 = (t % tiles) * kTile;
    const std::int64_t p1 = std::min(hw, p0 + kTile);
    float* dst = out + img * (hw + 1) * cin;
    kernels.channels_last(in + img * cin * hw, dst, cin, hw, p0, p1);
    if (p0 + kTile > hw) std::fill(dst + hw * cin, dst + (hw + 1) * cin, 0.0f);
  });
}

// Weight [Cout, Cin_g, kh, kw] packed per weight group into panels of kPanel output channels:
// packed[(gi * panels + q) * R * kPanel + r * kPanel + lane] = weight of output channel
// gi*Cout_g + q*kPanel + lane (0 past Cout_g) at reduction index r = tap * Cin_g + channel.
void pack_weight(const Geometry& g, const float* weight, std::int64_t panels, float* packed) {
  const std::int64_t r_all = g.reduction();
  const std::int64_t per_oc = g.cin_g * g.taps;  // weight floats per output channel
  // Writes in order; reads 16 rows (one per lane) that advance together.
  for (std::int64_t gi = 0; gi < g.gw; ++gi) {
    for (std::int64_t q = 0; q < panels; ++q) {
      float* dst = packed + (gi * panels + q) * r_all * kPanel;
      const std::int64_t oc0 = q * kPanel;
      const std::int64_t lanes = std::min(kPanel, g.cout_g - oc0);
      const float* src = weight + (gi * g.cout_g + oc0) * per_oc;
      for (std::int64_t k = 0; k < g.taps; ++k) {
        for (std::int64_t c = 0; c < g.cin_g; ++c) {
          float* d = dst + (k * g.cin_g + c) * kPanel;
          const float* s = src + c * g.taps + k;
          for (std::int64_t lane = 0; lane < lanes; ++lane) d[lane] = s[lane * per_oc];
          for (std::int64_t lane = lanes; lane < kPanel; ++lane) d[lane] = 0.0f;
        }
      }
    }
  }
}

Geometry validate(const Tensor& input, const Tensor& offset, const Tensor& weight,
                  const Tensor& bias, const Tensor& mask, const DeformConv2dOptions& options) {
  check_rank(input, 4, "input", kWhere);
  check_rank(offset, 4, "offset", kWhere);
  check_rank(weight, 4, "weight", kWhere);
  detail::check_pair(options.stride(), 1, "stride", kWhere);
  detail::check_pair(options.padding(), 0, "padding", kWhere);
  detail::check_pair(options.dilation(), 1, "dilation", kWhere);
  Geometry g{};
  g.n = input.dim(0), g.cin = input.dim(1), g.h = input.dim(2), g.w = input.dim(3);
  g.cout = weight.dim(0), g.kh = weight.dim(2), g.kw = weight.dim(3);
  g.taps = g.kh * g.kw;
  g.sh = options.stride().h, g.sw = options.stride().w;
  g.ph = options.padding().h, g.pw = options.padding().w;
  g.dh = options.dilation().h, g.dw = options.dilation().w;
  const std::string in_shape = to_string(input.shape());
  const std::string w_shape = to_string(weight.shape());
  CVATTN_CHECK(g.kh > 0 && g.kw > 0, ShapeError, kWhere, ": tensor 'weight' ", w_shape,
               " has an empty kernel");
  CVATTN_CHECK(g.taps <= (std::int64_t{1} << 31), ShapeError, kWhere, ": tensor 'weight' ", w_shape,
               " has more kernel taps than an offset tensor can describe");
  CVATTN_CHECK(weight.dim(1) > 0, ShapeError, kWhere,
               ": tensor 'weight' expected at least one "
               "input channel per group, got ",
               w_shape);
  CVATTN_CHECK(g.cin > 0, ShapeError, kWhere,
               ": tensor 'input' expected at least one channel, "
               "got ",
               in_shape);
  CVATTN_CHECK(g.cin % weight.dim(1) == 0, ShapeError, kWhere,
               ": tensor 'input' expected a "
               "multiple of ",
               weight.dim(1), " channels (weight ", w_shape, "), got ", in_shape);
  g.gw = g.cin / weight.dim(1);
  CVATTN_CHECK(g.cout % g.gw == 0, ShapeError, kWhere, ": tensor 'weight' ", w_shape, " has ",
               g.cout, " output channels, not a multiple of its ", g.gw, " groups (input channels ",
               g.cin, " / ", weight.dim(1), ")");
  g.cin_g = weight.dim(1);
  g.cout_g = g.cout / g.gw;

  CVATTN_CHECK(offset.dim(0) == g.n, ShapeError, kWhere, ": tensor 'offset' expected batch ", g.n,
               " (of 'input' ", in_shape, "), got ", to_string(offset.shape()));
  const std::int64_t pair_channels = 2 * g.taps;
  CVATTN_CHECK(offset.dim(1) > 0 && offset.dim(1) % pair_channels == 0, ShapeError, kWhere,
               ": tensor 'offset' expected 2*offset_groups*kh*kw channels (a positive multiple "
               "of ",
               pair_channels, " for the ", g.kh, "x", g.kw, " kernel of 'weight' ", w_shape,
               "), got ", to_string(offset.shape()));
  g.go = offset.dim(1) / pair_channels;
  CVATTN_CHECK(g.cin % g.go == 0, ShapeError, kWhere, ": the ", g.go, " offset groups of 'offset' ",
               to_string(offset.shape()), " must divide the channels of 'input' ", in_shape);
  g.cin_o = g.cin / g.go;

  const std::int64_t eff_h = g.dh * (g.kh - 1) + 1;
  const std::int64_t eff_w = g.dw * (g.kw - 1) + 1;
  CVATTN_CHECK(eff_h <= g.h + 2 * g.ph && eff_w <= g.w + 2 * g.pw, ShapeError, kWhere, ": kernel (",
               g.kh, ", ", g.kw, ") with dilation (", g.dh, ", ", g.dw, ") spans (", eff_h, ", ",
               eff_w, "), larger than the padded input (", g.h + 2 * g.ph, ", ", g.w + 2 * g.pw,
               ") of 'input' ", in_shape);
  g.ho = (g.h + 2 * g.ph - eff_h) / g.sh + 1;
  g.wo = (g.w + 2 * g.pw - eff_w) / g.sw + 1;
  CVATTN_CHECK(offset.dim(2) == g.ho && offset.dim(3) == g.wo, ShapeError, kWhere,
               ": tensor 'offset' expected the output size (", g.ho, ", ", g.wo,
               ") in its last two dimensions, got ", to_string(offset.shape()));
  g.masked = mask.defined();
  if (g.masked) check_shape(mask, {g.n, g.go * g.taps, g.ho, g.wo}, "mask", kWhere);
  if (bias.defined()) check_shape(bias, {g.cout}, "bias", kWhere);
  (void)checked_numel({g.n, g.cout, g.ho, g.wo}, "deform_conv2d output");
  return g;
}

}  // namespace

Tensor deform_conv2d(const Tensor& input, const Tensor& offset, const Tensor& weight,
                     const Tensor& bias, const Tensor& mask, const DeformConv2dOptions& options) {
  check_defined(input, "input", kWhere);
  check_defined(offset, "offset", kWhere);
  check_defined(weight, "weight", kWhere);
  const Geometry g = validate(input, offset, weight, bias, mask, options);
  Tensor out = Tensor::empty({g.n, g.cout, g.ho, g.wo});
  if (out.numel() == 0) return out;

  const std::int64_t p_all = g.positions();
  const std::int64_t r_all = g.reduction();
  const Plan plan = make_plan(g);
  const std::int64_t chunks = ceil_div(p_all, plan.cols);
  const std::int64_t hw1 = g.h * g.w + 1;

  // Everything is allocated (and checked against the tensor cap) before any parallel region;
  // the scratch is kept for the next call (core/workspace.hpp).
  using cvattn::detail::Workspace;
  const std::int64_t panels = ceil_div(g.cout_g, kPanel);
  const Workspace packed({g.gw, panels, r_all, kPanel}, "deform_conv2d (packed weight)");
  pack_weight(g, weight.data(), panels, packed.data());
  const BaseGrid grid(g);
  const cvattn::detail::DeformKernels kernels = cvattn::detail::deform_kernels();
  const Workspace channels_last({plan.round, hw1, g.cin}, "deform_conv2d (channels-last input)");
  const std::int64_t max_tasks = plan.round * chunks;
  const std::int64_t slots = detail::slot_count(max_tasks);
  const Workspace columns({slots, plan.cols * plan.r_blk}, "deform_conv2d (columns)");
  // Per slot: 4 weights and 4 indices per pixel of a chunk (an int32 index fills a float slot).
  static_assert(sizeof(std::int32_t) == sizeof(float));
  const Workspace taps({2, slots, 4, plan.cols}, "deform_conv2d (taps)");
  float* tap_weights = taps.data();
  auto* tap_index = reinterpret_cast<std::int32_t*>(taps.data() + slots * 4 * plan.cols);

  const float* in = input.data();
  const float* off = offset.data();
  const float* msk = g.masked ? mask.data() : nullptr;
  // The first depth block stores bias + sum; zeros without a bias (0 + sum, as fill-then-add).
  std::vector<float> bias_zeros;
  const float* bias_all = bias.defined() ? bias.data() : nullptr;
  if (!bias_all) {
    bias_zeros.assign(static_cast<std::size_t>(g.cout), 0.0f);
    bias_all = bias_zeros.data();
  }
  const float* wp = packed.data();
  float* o = out.data();
  float* cl = channels_last.data();

  for (std::int64_t n0 = 0; n0 < g.n; n0 += plan.round) {
    const std::int64_t images = std::min(plan.round, g.n - n0);
    to_channels_last(g, kernels, in + n0 * g.cin * g.h * g.w, images, cl);
    const std::int64_t tasks = images * chunks;
    const auto task = [&](std::int64_t t, std::int64_t slot) {
      const std::int64_t img = t / chunks;
      const std::int64_t ni = n0 + img;
      const std::int64_t p0 = (t % chunks) * plan.cols;
      const std::int64_t cols = std::min(plan.cols, p_all - p0);
      const float* image = cl + img * hw1 * g.cin;
      const float* off_n = off + ni * 2 * g.go * g.taps * p_all;
      const float* msk_n = msk ? msk + ni * g.go * g.taps * p_all : nullptr;
      float* col = columns.data() + slot * plan.cols * plan.r_blk;
      TapBlock tb{};
      for (int q = 0; q < 4; ++q) {
        tb.index[q] = tap_index + (slot * 4 + q) * plan.cols;
        tb.weight[q] = tap_weights + (slot * 4 + q) * plan.cols;
      }
      float* out_n = o + ni * g.cout * p_all;
      std::int64_t have_grp = -1, have_k = -1;  // taps currently in tb
      for (std::int64_t gi = 0; gi < g.gw; ++gi) {
        for (std::int64_t r0 = 0; r0 < r_all; r0 += plan.r_blk) {
          const std::int64_t r1 = std::min(r_all, r0 + plan.r_blk);
          const std::int64_t rl = r1 - r0;
          for (std::int64_t k = r0 / g.cin_g; k * g.cin_g < r1; ++k) {
            // Channels of weight group gi covered by this block at tap k, as absolute channels.
            const std::int64_t a_abs = gi * g.cin_g + std::max(r0 - k * g.cin_g, std::int64_t{0});
            const std::int64_t b_abs = gi * g.cin_g + std::min(r1 - k * g.cin_g, g.cin_g);
            for (std::int64_t grp = a_abs / g.cin_o; grp * g.cin_o < b_abs; ++grp) {
              const std::int64_t a = std::max(a_abs, grp * g.cin_o);
              const std::int64_t e = std::min(b_abs, (grp + 1) * g.cin_o);
              if (grp != have_grp || k != have_k) {
                kernels.taps(g, grid, off_n, msk_n, grp, k, p0, cols, tb);
                have_grp = grp, have_k = k;
              }
              kernels.scatter(tb, cols, image + a, g.cin, e - a,
                              col + (k * g.cin_g + (a - gi * g.cin_g) - r0), rl);
            }
          }
          kernels.gemm(col, cols, rl, wp + (gi * panels * r_all + r0) * kPanel, r_all * kPanel,
                       g.cout_g, out_n + gi * g.cout_g * p_all + p0, p_all,
                       r0 == 0 ? bias_all + gi * g.cout_g : nullptr);
        }
      }
    };
    // Handed out dynamically: a task's output does not depend on the thread that runs it.
    detail::for_each_task_dynamic(tasks, std::min(slots, tasks), task);
  }
  return out;
}

Tensor sampling_positions(const Tensor& offset, Pair2 kernel_size,
                          const std::vector<cv::Point>& points,
                          const DeformConv2dOptions& options) {
  constexpr const char* kFn = "sampling_positions";
  check_rank(offset, 4, "offset", kFn);
  detail::check_pair(kernel_size, 1, "kernel_size", kFn);
  detail::check_pair(options.stride(), 1, "stride", kFn);
  detail::check_pair(options.padding(), 0, "padding", kFn);
  detail::check_pair(options.dilation(), 1, "dilation", kFn);
  const std::int64_t kh = kernel_size.h, kw = kernel_size.w;
  CVATTN_CHECK(kh * kw <= (std::int64_t{1} << 31), ValueError, kFn, ": kernel_size (", kh, ", ", kw,
               ") has more taps than an offset tensor can describe");
  const std::int64_t taps = kh * kw;
  const std::int64_t n = offset.dim(0), ho = offset.dim(2), wo = offset.dim(3);
  CVATTN_CHECK(offset.dim(1) > 0 && offset.dim(1) % (2 * taps) == 0, ShapeError, kFn,
               ": tensor 'offset' expected 2*offset_groups*kh*kw channels (a positive multiple "
               "of ",
               2 * taps, " for kernel_size (", kh, ", ", kw, ")), got ", to_string(offset.shape()));
  const std::int64_t go = offset.dim(1) / (2 * taps);
  std::vector<cv::Point> all;
  const std::vector<cv::Point>* pts = &points;
  if (points.empty()) {
    all.reserve(static_cast<std::size_t>(ho * wo));
    for (std::int64_t y = 0; y < ho; ++y) {
      for (std::int64_t x = 0; x < wo; ++x) {
        all.emplace_back(static_cast<int>(x), static_cast<int>(y));
      }
    }
    pts = &all;
  }
  for (const cv::Point& pt : *pts) {
    CVATTN_CHECK(pt.x >= 0 && pt.x < wo && pt.y >= 0 && pt.y < ho, ShapeError, kFn,
                 ": point (x=", pt.x, ", y=", pt.y, ") lies outside the ", wo, "x", ho,
                 " output of 'offset' ", to_string(offset.shape()));
  }
  const auto np = static_cast<std::int64_t>(pts->size());
  Tensor out = Tensor::empty({n, go, np, taps, 2});
  const float* src = offset.data();
  float* dst = out.data();
  const std::int64_t plane = ho * wo;
  for (std::int64_t b = 0; b < n; ++b) {
    for (std::int64_t g = 0; g < go; ++g) {
      for (std::int64_t p = 0; p < np; ++p) {
        const cv::Point& pt = (*pts)[static_cast<std::size_t>(p)];
        const std::int64_t at = pt.y * wo + pt.x;
        for (std::int64_t k = 0; k < taps; ++k) {
          const std::int64_t i = k / kw, j = k % kw;
          const float* dy = src + ((b * go + g) * 2 * taps + 2 * k) * plane;
          const float* dx = dy + plane;
          float* d = dst + (((b * go + g) * np + p) * taps + k) * 2;
          d[0] = static_cast<float>(pt.y * options.stride().h - options.padding().h +
                                    i * options.dilation().h) +
                 dy[at];
          d[1] = static_cast<float>(pt.x * options.stride().w - options.padding().w +
                                    j * options.dilation().w) +
                 dx[at];
        }
      }
    }
  }
  return out;
}

}  // namespace cvattn::functional
#endif  // HWY_ONCE

// The runtime-dispatched sampling kernels (grid_sample, deform_conv2d) against their reference
// twins (src/functional/reference/), on every SIMD target this build and CPU support, over odd
// shapes that hit the vector tails, several blocks, and NaN / +-inf / huge coordinates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cvattn/functional/deform_conv.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/functional/sampling3d.hpp"
#include "functional/detail/affine_grid_kernel.hpp"
#include "functional/detail/grid_sample3d_job.hpp"
#include "functional/detail/grid_sample_job.hpp"
#include "functional/reference/affine_grid.hpp"
#include "functional/reference/deform_conv.hpp"
#include "functional/reference/grid_sample.hpp"
#include "functional/reference/grid_sample3d.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using test::for_each_simd_target;
using test::random_tensor;

// Element-wise |got - want| <= atol + rtol * |want|, NaN only where the reference has NaN.
void expect_close(const Tensor& got, const Tensor& want, float atol, float rtol) {
  ASSERT_EQ(got.shape(), want.shape());
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    const float a = got[i], b = want[i];
    const bool ok = (std::isnan(a) && std::isnan(b)) || (a == b) ||
                    std::fabs(a - b) <= atol + rtol * std::fabs(b);
    if (!ok && bad++ < 5) ADD_FAILURE() << "element " << i << ": got " << a << ", want " << b;
  }
  EXPECT_EQ(bad, 0);
}

// A grid of mostly in-range values, a margin outside [-1, 1], and (with specials) every kind of
// value PyTorch treats specially: NaN, +-inf, huge, and the exact edges. A wide grid spans
// [-2.5, 2.5], a zoomed-out view where most samples have all their corners outside.
Tensor sampling_grid(std::int64_t n, std::int64_t ho, std::int64_t wo, std::uint64_t seed,
                     bool specials, bool wide = false) {
  const float span = wide ? 2.5f : 1.25f;
  Tensor g = random_tensor({n, ho, wo, 2}, seed, -span, span);
  if (specials) {
    const float inf = std::numeric_limits<float>::infinity();
    const float values[] = {std::numeric_limits<float>::quiet_NaN(),
                            inf,
                            -inf,
                            1e10f,
                            -1e10f,
                            -1.0f,
                            1.0f,
                            0.0f,
                            3e9f,
                            -0.999999f};
    for (std::int64_t i = 0; i < g.numel(); i += 7) g[i] = values[(i / 7) % 10];
  }
  return g;
}

struct GridCase {
  std::int64_t n, c, h, w, ho, wo;
};

// Calls check(k, x, grid, options) for every case k (input x drawn from `seed` on), a grid with
// and one without special values and a wide one, and every mode x padding x align_corners, under a
// trace naming them.
template <std::size_t N, class Check>
void for_each_grid_sample(const GridCase (&cases)[N], std::uint64_t seed, Check check) {
  for (const GridCase& k : cases) {
    const Tensor x = random_tensor({k.n, k.c, k.h, k.w}, seed++);
    for (const int kind : {0, 1, 2}) {  // plain, with special values, wide
      const bool specials = kind == 1;
      const Tensor grid = sampling_grid(k.n, k.ho, k.wo, seed++, specials, kind == 2);
      for (const auto mode :
           {F::Interpolation::bilinear, F::Interpolation::nearest, F::Interpolation::bicubic}) {
        for (const auto pad :
             {F::PaddingMode::zeros, F::PaddingMode::border, F::PaddingMode::reflection}) {
          for (const bool ac : {false, true}) {
            SCOPED_TRACE(std::string(F::interpolation_name(mode)) + " " +
                         F::padding_mode_name(pad) + (ac ? " align_corners" : "") +
                         (specials ? " specials" : "") + (kind == 2 ? " wide" : "") +
                         " C=" + std::to_string(k.c) + " H=" + std::to_string(k.h) +
                         " W=" + std::to_string(k.w));
            check(k, x, grid,
                  F::GridSampleOptions().mode(mode).padding_mode(pad).align_corners(ac));
          }
        }
      }
    }
  }
}

TEST(SimdParitySampling, GridSampleForward) {
  // Odd sizes, a 1-pixel-wide plane, C not a multiple of the channel group, and one output plane
  // of more than one block (1024 pixels); C = 1, 2, 3, 5, 6, 9 and 17 end the 4-plane groups of
  // the nearest loop in every size.
  const GridCase cases[] = {{2, 3, 7, 11, 5, 19},   {1, 9, 13, 6, 37, 29}, {3, 1, 1, 9, 4, 7},
                            {2, 17, 10, 12, 9, 13}, {1, 5, 2, 1, 3, 5},    {2, 2, 6, 5, 4, 9},
                            {1, 6, 5, 7, 6, 5}};
  for_each_simd_target([&] {
    for_each_grid_sample(
        cases, 1,
        [](const GridCase&, const Tensor& x, const Tensor& grid, const F::GridSampleOptions& o) {
          expect_close(F::grid_sample(x, grid, o), reference::grid_sample(x, grid, o), 1e-5f,
                       1e-5f);
        });
  });
}

// The channel-group kernels (C >= 8 on targets with a native FMA; issue 17) are bit-identical to
// the reference twin: every element of the channels they compute has the reference's bits (or
// is NaN where it is NaN). The channels after the last full group take the per-channel kernels,
// also exact for bilinear and nearest there; bicubic's per-channel kernel sums its interior
// samples in another order (within rounding), as do all kernels of targets without FMA.
// SVE targets count too: grid_sample's source is compiled for NEON only there (HWY_BROKEN_TARGETS
// in src/CMakeLists.txt), so an SVE CPU runs its NEON kernels.
bool has_channel_kernels(const std::string& target) {
  const auto starts = [&](const char* prefix) { return target.rfind(prefix, 0) == 0; };
  return target == "avx2" || starts("avx3") || starts("avx10") || starts("neon") || starts("sve");
}

TEST(SimdParitySampling, GridSampleChannelGroupsBitExact) {
  // N > 1, odd H != W, output size != input size, partial pixel tiles, and a bilinear/nearest
  // output plane of two blocks (1024 pixels), bicubic of five (256). C = 24 and 41 are wide
  // (16-channel) blocks followed by a narrow one where the target has both (AVX-512, bicubic).
  const GridCase cases[] = {{2, 8, 7, 11, 5, 19},   {3, 9, 13, 6, 37, 29}, {2, 15, 9, 5, 11, 7},
                            {2, 16, 11, 13, 13, 9}, {2, 17, 5, 9, 7, 3},   {2, 33, 7, 3, 9, 11},
                            {2, 64, 5, 7, 6, 9},    {2, 24, 6, 5, 7, 5},   {1, 41, 5, 6, 9, 7}};
  int grouped_targets = 0;
  for_each_simd_target([&] {
    bool grouped = false;
    for_each_grid_sample(
        cases, 500,
        [&](const GridCase& k, const Tensor& x, const Tensor& grid, const F::GridSampleOptions& o) {
          const std::int64_t packed = detail::grid_sample_grouped_channels(k.c, k.h, k.w, o.mode());
          grouped = grouped || packed > 0;
          const Tensor got = F::grid_sample(x, grid, o);
          const Tensor want = reference::grid_sample(x, grid, o);
          ASSERT_EQ(got.shape(), want.shape());
          const std::int64_t exact = packed == 0                             ? 0
                                     : o.mode() != F::Interpolation::bicubic ? k.c
                                                                             : packed;
          const std::int64_t plane = k.ho * k.wo;
          std::int64_t bad = 0;
          for (std::int64_t i = 0; i < got.numel(); ++i) {
            const float a = got[i], b = want[i];
            const bool same =
                (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof(float)) == 0;
            const bool ok = same || ((i / plane) % k.c >= exact &&
                                     std::fabs(a - b) <= 1e-5f + 1e-5f * std::fabs(b));
            if (!ok && bad++ < 5) {
              ADD_FAILURE() << "element " << i << " (channel " << (i / plane) % k.c << ", "
                            << packed << " packed): got " << a << ", want " << b;
            }
          }
          EXPECT_EQ(bad, 0);
        });
    // The fixed-width targets with a native FMA take the kernels (AVX2 and AVX-512 on x86-64,
    // NEON on aarch64, also under an SVE target); SSE4 and the scalar ones do not.
    const std::string t = cvattn::simd::current_target();
    EXPECT_EQ(grouped, has_channel_kernels(t)) << "target " << t;
    grouped_targets += grouped ? 1 : 0;
  });
  // Every x86-64 CPU with AVX2 and every aarch64 CPU has such a target; a CPU with SSE4 at most
  // (checked under qemu, .ci/check-x86-cpus.sh) has none.
  const auto all = cvattn::simd::supported_targets();
  EXPECT_EQ(grouped_targets > 0, std::any_of(all.begin(), all.end(), has_channel_kernels));
}

// got[i] and want[i] for i < n, bit for bit (NaN matching NaN).
void expect_bit_equal(const float* got, const float* want, std::int64_t n) {
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float a = got[i], b = want[i];
    if ((std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0) continue;
    if (bad++ < 5) ADD_FAILURE() << "element " << i << ": got " << a << ", want " << b;
  }
  EXPECT_EQ(bad, 0);
}

void expect_bit_equal(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  expect_bit_equal(got.data(), want.data(), got.numel());
}

// grid_sample_backward (GridSampleBackwardBlock) against its reference twin on every target, every
// mode x padding x align_corners, grids with and without NaN / +-inf / huge values. On one thread
// both gradients are bit-identical: grid_sample.cpp is built without FMA contraction, kernel and
// twin take PyTorch's operation order, and the one worker scatters pixel by pixel in the twin's
// order. With N below the thread count each worker scatters into its own copy of grad_input,
// summed afterwards: grad_input then within 1e-5 + 1e-5 |ref| (the same sums in another order);
// grad_grid (a pixel's sum over its channels, within one block) stays exact.
TEST(SimdParitySampling, GridSampleBackward) {
  // N > 1, odd sizes, two blocks of 256 pixels with N = 1 (per-worker copies on two threads),
  // 1-pixel-high and 1-pixel-wide planes, and C = 9 (nearest scatters 4 + 4 + 1 planes per pixel).
  const GridCase cases[] = {{2, 5, 9, 13, 7, 11},
                            {1, 3, 6, 5, 19, 17},
                            {2, 2, 1, 7, 4, 9},
                            {1, 4, 5, 1, 7, 9},
                            {1, 9, 4, 6, 5, 7}};
  for (const int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    const test::ThreadScope scope(threads);
    for_each_simd_target([&] {
      for_each_grid_sample(
          cases, 11,
          [&](const GridCase& k, const Tensor& x, const Tensor& grid,
              const F::GridSampleOptions& o) {
            const Tensor gout =
                random_tensor({k.n, k.c, k.ho, k.wo}, 200 + static_cast<std::uint64_t>(k.ho));
            const F::GridSampleGrads got = F::grid_sample_backward(x, grid, gout, o);
            const F::GridSampleGrads want = reference::grid_sample_backward(x, grid, gout, o);
            expect_bit_equal(got.grad_grid, want.grad_grid);
            if (threads == 1) {
              expect_bit_equal(got.grad_input, want.grad_input);
            } else {
              expect_close(got.grad_input, want.grad_input, 1e-5f, 1e-5f);
            }
          });
    });
  }
}

// Bicubic taps of pixel coordinates in [2^24, 2^25), where floats are 2 apart: tap i is
// floor(x) + (i - 1) rounded once, as PyTorch adds it; reflection padding then reads taps that
// another rounding would move. Forward and backward, every target, against the twins.
TEST(SimdParitySampling, GridSampleBicubicTapsPast2To24) {
  const Tensor x = random_tensor({1, 2, 3, 7}, 71);
  std::vector<float> values;
  // g -> x = (g + 1) * 3.5 - 0.5 (align_corners=false) and (g + 1) * 3 (true) past 2^24.
  for (const float g0 : {4793490.0f, 5592406.0f}) {
    for (int i = 0; i < 64; ++i) {
      values.push_back(g0 + 0.5f * static_cast<float>(i));
      values.push_back(0.1f);
    }
  }
  const Tensor grid = Tensor::from_vector({1, 8, 16, 2}, values);
  const Tensor gout = random_tensor({1, 2, 8, 16}, 72);
  for (const bool align : {false, true}) {
    const auto o = F::GridSampleOptions()
                       .mode(F::Interpolation::bicubic)
                       .padding_mode(F::PaddingMode::reflection)
                       .align_corners(align);
    const test::ThreadScope scope(1);
    for_each_simd_target([&] {
      SCOPED_TRACE(align ? "align" : "");
      expect_close(F::grid_sample(x, grid, o), reference::grid_sample(x, grid, o), 1e-5f, 1e-5f);
      const F::GridSampleGrads got = F::grid_sample_backward(x, grid, gout, o);
      const F::GridSampleGrads want = reference::grid_sample_backward(x, grid, gout, o);
      expect_bit_equal(got.grad_input, want.grad_input);
      expect_bit_equal(got.grad_grid, want.grad_grid);
    });
  }
}

// Every fifth value of a 5-D grid set to one PyTorch treats specially: NaN, +-inf, beyond
// int32, past 2^24 (where x0 + 1 rounds), and the exact edges.
void add_grid3d_specials(Tensor& grid) {
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            inf,
                            -inf,
                            1e10f,
                            -3e9f,
                            4e6f,
                            -2.5e7f,
                            -1.0f,
                            1.0f,
                            0.0f,
                            -0.999999f,
                            1.0000001f};
  for (std::int64_t i = 0; i < grid.numel(); i += 5) grid[i] = specials[(i / 5) % 12];
}

// Volumetric grid_sample (grid_sample3d-inl.h): every element bit-identical to the reference
// twin on every target, channel groups (C >= 8), the channels after them and C < 8 alike.
// Grids hold in-range values, a margin outside, and every kind of value PyTorch treats
// specially: NaN, +-inf, beyond int32, past 2^24 (where x0 + 1 rounds), and the exact edges;
// the input has NaN and inf too, inside voxels propagating them and outside ones not.
// Every target but the one-lane scalar one. An SVE target counts: grid_sample3d's source is
// compiled for NEON only there (HWY_BROKEN_TARGETS in src/CMakeLists.txt).
bool has_channel_tiles(const std::string& target) { return target != "scalar"; }

TEST(SimdParitySampling, GridSample3dBitExact) {
  struct Case {
    std::int64_t n, c, d, h, w, dout, hout, wout;
  };
  // Odd sizes, 1-voxel axes, C below, at and past a channel group, wide (16-channel) blocks
  // followed by a narrow one (C = 24, 41, on AVX-512), and outputs of one partial block and of
  // several blocks (256 voxels) with partial vectors at the end.
  const Case cases[] = {
      {2, 3, 5, 7, 6, 3, 5, 19},  {1, 8, 4, 9, 5, 7, 6, 11},  {2, 9, 3, 5, 7, 9, 4, 13},
      {1, 16, 6, 6, 6, 5, 9, 13}, {2, 19, 1, 1, 7, 3, 5, 17}, {1, 12, 7, 1, 5, 2, 3, 1},
      {1, 8, 2, 3, 1, 1, 1, 1},   {1, 24, 3, 4, 5, 4, 5, 7},  {1, 41, 2, 3, 4, 3, 3, 5}};
  const float inf = std::numeric_limits<float>::infinity();
  int grouped_targets = 0;
  for_each_simd_target([&] {
    std::uint64_t seed = 900;
    bool grouped = false;
    for (const Case& k : cases) {
      Tensor x = random_tensor({k.n, k.c, k.d, k.h, k.w}, seed++);
      x[1] = std::numeric_limits<float>::quiet_NaN();
      x[x.numel() - 1] = -inf;
      grouped = grouped || detail::grid_sample3d_grouped_channels(k.c, k.d * k.h * k.w,
                                                                  F::Interpolation::bilinear) > 0;
      for (const bool special : {false, true}) {
        Tensor grid = random_tensor({k.n, k.dout, k.hout, k.wout, 3}, seed++, -1.25f, 1.25f);
        if (special) {
          add_grid3d_specials(grid);
        }
        for (const auto mode : {F::Interpolation::bilinear, F::Interpolation::nearest}) {
          for (const auto pad :
               {F::PaddingMode::zeros, F::PaddingMode::border, F::PaddingMode::reflection}) {
            for (const bool align : {false, true}) {
              const auto o =
                  F::GridSampleOptions().mode(mode).padding_mode(pad).align_corners(align);
              SCOPED_TRACE(std::string(F::interpolation_name(mode)) + " " +
                           F::padding_mode_name(pad) + (align ? " align" : "") + " C " +
                           std::to_string(k.c) + (special ? " specials" : ""));
              const Tensor got = F::grid_sample(x, grid, o);
              const Tensor want = reference::grid_sample3d(x, grid, o);
              ASSERT_EQ(got.shape(), want.shape());
              std::int64_t bad = 0;
              for (std::int64_t i = 0; i < got.numel(); ++i) {
                const float a = got[i], b = want[i];
                if ((std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0) {
                  continue;
                }
                if (bad++ < 5) ADD_FAILURE() << "element " << i << ": got " << a << ", want " << b;
              }
              EXPECT_EQ(bad, 0);
            }
          }
        }
      }
    }
    // Every target with more than one fixed-width lane samples channel groups.
    EXPECT_EQ(grouped, has_channel_tiles(cvattn::simd::current_target()));
    grouped_targets += grouped ? 1 : 0;
  });
  // So does every CPU with SSE4 or NEON; an x86-64 baseline CPU (qemu64) has the scalar target
  // only.
  const auto all = cvattn::simd::supported_targets();
  EXPECT_EQ(grouped_targets > 0, std::any_of(all.begin(), all.end(), has_channel_tiles));
}

// The volumetric grid_sample_backward (GridSample3dBackwardVolume) against its reference twin on
// every target, both modes x every padding x align_corners: bit-identical. grid_sample3d.cpp is
// built without FMA contraction, kernel and twin take the order of PyTorch's scalar kernel, and
// each volume is one task scattering voxel by voxel (so the thread count does not matter). Grids
// hold in-range values, a margin outside, NaN, +-inf, values beyond int32 and the exact edges.
TEST(SimdParitySampling, GridSample3dBackward) {
  struct Case {
    std::int64_t n, c, d, h, w, dout, hout, wout;
  };
  // N > 1, odd sizes, 1-voxel axes, more than one block of 256 output voxels, and C = 9 (nearest
  // scatters 4 + 4 + 1 planes per voxel).
  const Case cases[] = {{2, 5, 4, 7, 6, 3, 5, 9},
                        {1, 3, 3, 1, 5, 2, 4, 37},
                        {2, 2, 1, 3, 1, 3, 2, 5},
                        {1, 9, 2, 3, 4, 2, 3, 5}};
  std::uint64_t seed = 31;
  for (const Case& k : cases) {
    const Tensor x = random_tensor({k.n, k.c, k.d, k.h, k.w}, seed++);
    const Tensor gout = random_tensor({k.n, k.c, k.dout, k.hout, k.wout}, seed++);
    Tensor grid = random_tensor({k.n, k.dout, k.hout, k.wout, 3}, seed++, -1.25f, 1.25f);
    add_grid3d_specials(grid);
    for (const auto mode : {F::Interpolation::bilinear, F::Interpolation::nearest}) {
      for (const auto pad :
           {F::PaddingMode::zeros, F::PaddingMode::border, F::PaddingMode::reflection}) {
        for (const bool align : {false, true}) {
          const auto o = F::GridSampleOptions().mode(mode).padding_mode(pad).align_corners(align);
          const F::GridSampleGrads want = reference::grid_sample3d_backward(x, grid, gout, o);
          for_each_simd_target([&] {
            SCOPED_TRACE(std::string(F::interpolation_name(mode)) + " " +
                         F::padding_mode_name(pad) + (align ? " align" : "") + " C " +
                         std::to_string(k.c));
            const F::GridSampleGrads got = F::grid_sample_backward(x, grid, gout, o);
            expect_bit_equal(got.grad_input, want.grad_input);
            expect_bit_equal(got.grad_grid, want.grad_grid);
          });
        }
      }
    }
  }
}

// The backward twins against PyTorch itself: every committed grid_sample_backward fixture
// (tests/fixtures/sampling*.py), so that the twins the kernels are held to are anchored to
// PyTorch, not only to the kernels. 3-D: bit for bit (torch's scalar kernel has no fused
// operations). 2-D: within 1e-5 + 1e-5 |ref|: torch's build fuses some products into its sums
// (the twin, like the kernel, rounds them apart) and scatters each vector of pixels corner by
// corner, another order of the same sums (up to 2.4e-6 apart on these cases).
TEST(SamplingTwins, BackwardMatchesPyTorchFixtures) {
  int count2d = 0, count3d = 0;
  for (const char* area : {"sampling", "sampling3d"}) {
    for (const auto& fx : test::fixtures_in(area)) {
      const auto& p = fx.params();
      if (p.at("op").get<std::string>() != "grid_sample_backward") continue;
      SCOPED_TRACE(std::string(area) + "/" + fx.name());
      const auto o =
          F::GridSampleOptions()
              .mode(F::parse_interpolation(p.at("mode").get<std::string>()))
              .padding_mode(F::parse_padding_mode(p.at("padding_mode").get<std::string>()))
              .align_corners(p.at("align_corners").get<bool>());
      const Tensor x = fx.tensor("input"), grid = fx.tensor("grid");
      const Tensor gout = fx.tensor("grad_output");
      const bool volume = x.rank() == 5;
      const F::GridSampleGrads got = volume ? reference::grid_sample3d_backward(x, grid, gout, o)
                                            : reference::grid_sample_backward(x, grid, gout, o);
      const test::Tolerance tol = volume ? test::Tolerance{0.0, 0.0} : test::Tolerance{1e-5, 1e-5};
      EXPECT_TENSOR_NEAR(got.grad_input, fx.tensor("grad_input"), tol);
      EXPECT_TENSOR_NEAR(got.grad_grid, fx.tensor("grad_grid"), tol);
      ++(volume ? count3d : count2d);
    }
  }
  // Every mode x padding x align_corners (their CoverTheOptionSpace tests pin the folders).
  EXPECT_GE(count2d, 18 * 2);
  EXPECT_GE(count3d, 12 * 2);
}

struct DeformCase {
  std::int64_t n, cin, cout, h, w, kh, kw, groups, offset_groups;
  Pair2 stride, padding, dilation;
  bool masked, biased;
};

TEST(SimdParitySampling, DeformConv2d) {
  // Channels not a multiple of any vector width, several weight and offset groups, a full
  // 16-channel panel plus a partial one, strides, dilations, and v1 (no mask) and v2.
  const DeformCase cases[] = {
      {2, 5, 7, 9, 11, 3, 3, 1, 1, Pair2(1), Pair2(1), Pair2(1), true, true},
      {1, 6, 8, 8, 13, 2, 3, 2, 3, Pair2(2, 1), Pair2(0, 1), Pair2(1, 2), false, true},
      {2, 37, 20, 7, 6, 3, 3, 1, 1, Pair2(1), Pair2(1), Pair2(1), true, false},
      {1, 64, 33, 10, 9, 3, 3, 1, 2, Pair2(1), Pair2(2), Pair2(2), true, true},
      {3, 3, 2, 1, 5, 1, 3, 1, 1, Pair2(1), Pair2(0, 1), Pair2(1), false, false},
  };
  for_each_simd_target([&] {
    std::uint64_t seed = 100;
    for (const DeformCase& k : cases) {
      SCOPED_TRACE("cin=" + std::to_string(k.cin) + " cout=" + std::to_string(k.cout) + " " +
                   std::to_string(k.kh) + "x" + std::to_string(k.kw));
      const auto o =
          F::DeformConv2dOptions().stride(k.stride).padding(k.padding).dilation(k.dilation);
      const std::int64_t ho =
          (k.h + 2 * k.padding.h - (k.dilation.h * (k.kh - 1) + 1)) / k.stride.h + 1;
      const std::int64_t wo =
          (k.w + 2 * k.padding.w - (k.dilation.w * (k.kw - 1) + 1)) / k.stride.w + 1;
      const std::int64_t taps = k.kh * k.kw;
      const Tensor x = random_tensor({k.n, k.cin, k.h, k.w}, seed++);
      Tensor off = random_tensor({k.n, 2 * k.offset_groups * taps, ho, wo}, seed++, -3.0f, 3.0f);
      // Samples far outside, on the range limits, and NaN.
      const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                                1e9f,
                                -1e9f,
                                -1.0f,
                                static_cast<float>(k.h),
                                0.5f};
      for (std::int64_t i = 0; i < off.numel(); i += 11) off[i] = specials[(i / 11) % 6];
      const Tensor weight = random_tensor({k.cout, k.cin / k.groups, k.kh, k.kw}, seed++);
      const Tensor bias = k.biased ? random_tensor({k.cout}, seed++) : Tensor();
      const Tensor mask =
          k.masked ? random_tensor({k.n, k.offset_groups * taps, ho, wo}, seed++, 0.0f, 1.0f)
                   : Tensor();
      expect_close(F::deform_conv2d(x, off, weight, bias, mask, o),
                   reference::deform_conv2d(x, off, weight, bias, mask, o), 1e-4f, 1e-4f);
    }
  });
}

// F.affine_grid's base coordinate i of count (as PyTorch's linspace_from_neg_one for count 1).
float affine_base(std::int64_t i, std::int64_t count, bool align) {
  if (count == 1) return 0.0f;
  const float c = -1.0f + 2.0f * static_cast<float>(i) / static_cast<float>(count - 1);
  return align ? c : c * static_cast<float>(count - 1) / static_cast<float>(count);
}

std::vector<float> affine_bases(std::int64_t count, bool align) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < count; ++i) v.push_back(affine_base(i, count, align));
  return v;
}

void expect_bit_equal(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  expect_bit_equal(got.data(), want.data(), static_cast<std::int64_t>(got.size()));
}

// affine_grid's rows (detail::affine_grid_rows) on every target: bit for bit the reference twin,
// PyTorch's rounding (x*t0, y*t1 fused onto it, + t2), over vector bodies and tails (odd widths),
// several rows per dispatch and align_corners both ways, on F.affine_grid's base coordinates and
// on arbitrary ones; and F::affine_grid within 1e-6 of the twin on these base coordinates (the
// library computes them as torch.linspace does, which may differ from the formula above in the
// last bit).
TEST(AffineGridParity, BitExactOnEveryTarget) {
  const Tensor theta = random_tensor({3, 2, 3}, 41);
  for (const bool align : {false, true}) {
    for (const std::int64_t w : {1, 7, 17, 224}) {
      SCOPED_TRACE("w " + std::to_string(w) + (align ? " align" : ""));
      const std::int64_t h = 5;
      const std::vector<float> xs = affine_bases(w, align), ys = affine_bases(h, align);
      const std::vector<float> xr =
          test::random_vector(w, 50 + static_cast<std::uint64_t>(w), -3.0f, 3.0f);
      const std::vector<float> yr =
          test::random_vector(h, 51 + static_cast<std::uint64_t>(w), -3.0f, 3.0f);
      std::vector<float> want(static_cast<std::size_t>(3 * h * w * 2));
      for (std::int64_t n = 0; n < 3; ++n) {
        reference::affine_grid_rows(xs.data(), ys.data(), h, theta.data() + n * 6,
                                    want.data() + n * h * w * 2, w);
      }
      std::vector<float> want_r(static_cast<std::size_t>(h * w * 2));
      reference::affine_grid_rows(xr.data(), yr.data(), h, theta.data(), want_r.data(), w);
      for_each_simd_target([&] {
        std::vector<float> got(want.size(), 7.0f);
        for (std::int64_t n = 0; n < 3; ++n) {
          detail::affine_grid_rows(xs.data(), ys.data(), h, theta.data() + n * 6,
                                   got.data() + n * h * w * 2, w);
        }
        expect_bit_equal(got, want);
        std::vector<float> got_r(want_r.size(), 7.0f);
        detail::affine_grid_rows(xr.data(), yr.data(), h, theta.data(), got_r.data(), w);
        expect_bit_equal(got_r, want_r);
        const Tensor grid = F::affine_grid(theta, {3, 1, h, w}, align);
        ASSERT_EQ(grid.numel(), static_cast<std::int64_t>(want.size()));
        for (std::int64_t i = 0; i < grid.numel(); ++i) {
          ASSERT_NEAR(grid[i], want[static_cast<std::size_t>(i)], 1e-6f) << "element " << i;
        }
      });
    }
  }
}

// The 3-D rows (detail::affine_grid_rows_3d; size {N, C, D, H, W}, theta [N, 3, 4]) the same way:
// x*r0, then y*r1 and z*r2 fused on in turn, then + r3.
TEST(AffineGridParity, BitExactOnEveryTarget3d) {
  const Tensor theta = random_tensor({2, 3, 4}, 43);
  for (const bool align : {false, true}) {
    // 70 rows of 200: F::affine_grid dispatches runs of 54 rows, so runs end inside a depth
    // plane too.
    const std::pair<std::int64_t, std::int64_t> sizes[] = {
        {5, 1}, {5, 7}, {5, 17}, {5, 61}, {70, 200}};
    for (const auto& size : sizes) {
      const std::int64_t h = size.first, w = size.second;
      SCOPED_TRACE("h " + std::to_string(h) + " w " + std::to_string(w) + (align ? " align" : ""));
      const std::int64_t d = 3, plane = h * w * 3;
      const std::vector<float> xs = affine_bases(w, align), ys = affine_bases(h, align);
      const std::vector<float> zs = affine_bases(d, align);
      const std::vector<float> xr =
          test::random_vector(w, 60 + static_cast<std::uint64_t>(w), -3.0f, 3.0f);
      const std::vector<float> yr =
          test::random_vector(h, 61 + static_cast<std::uint64_t>(h), -3.0f, 3.0f);
      std::vector<float> want(static_cast<std::size_t>(2 * d * plane));
      for (std::int64_t n = 0; n < 2; ++n) {
        for (std::int64_t z = 0; z < d; ++z) {
          reference::affine_grid_rows_3d(xs.data(), ys.data(), h, zs[static_cast<std::size_t>(z)],
                                         theta.data() + n * 12, want.data() + (n * d + z) * plane,
                                         w);
        }
      }
      std::vector<float> want_r(static_cast<std::size_t>(plane));
      reference::affine_grid_rows_3d(xr.data(), yr.data(), h, -0.37f, theta.data() + 12,
                                     want_r.data(), w);
      for_each_simd_target([&] {
        std::vector<float> got(want.size(), 7.0f);
        for (std::int64_t n = 0; n < 2; ++n) {
          for (std::int64_t z = 0; z < d; ++z) {
            detail::affine_grid_rows_3d(xs.data(), ys.data(), h, zs[static_cast<std::size_t>(z)],
                                        theta.data() + n * 12, got.data() + (n * d + z) * plane, w);
          }
        }
        expect_bit_equal(got, want);
        std::vector<float> got_r(want_r.size(), 7.0f);
        detail::affine_grid_rows_3d(xr.data(), yr.data(), h, -0.37f, theta.data() + 12,
                                    got_r.data(), w);
        expect_bit_equal(got_r, want_r);
        const Tensor grid = F::affine_grid(theta, {2, 1, d, h, w}, align);
        ASSERT_EQ(grid.numel(), static_cast<std::int64_t>(want.size()));
        for (std::int64_t i = 0; i < grid.numel(); ++i) {
          ASSERT_NEAR(grid[i], want[static_cast<std::size_t>(i)], 1e-6f) << "element " << i;
        }
      });
    }
  }
}

}  // namespace
}  // namespace cvattn

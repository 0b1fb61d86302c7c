// Every runtime-dispatched kernel against its reference twin (src/functional/reference/), on
// every SIMD target this build and CPU support, over random sizes that hit the loop tails.
#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/core/simd.hpp"
#include "cvattn/functional/channel_attention.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/selective_kernel.hpp"
#include "functional/detail/channel_kernels.hpp"
#include "functional/detail/conv_kernels.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/interp_kernels.hpp"
#include "functional/detail/norm_kernels.hpp"
#include "functional/detail/pool_kernels.hpp"
#include "functional/detail/reduce.hpp"
#include "functional/detail/selective_kernel.hpp"
#include "functional/detail/winograd_kernels.hpp"
#include "functional/reference/channel_kernels.hpp"
#include "functional/reference/conv_dilated.hpp"
#include "functional/reference/interp_kernels.hpp"
#include "functional/reference/norm_kernels.hpp"
#include "functional/reference/pool_kernels.hpp"
#include "functional/reference/reduce.hpp"
#include "functional/reference/selective_kernel.hpp"
#include "functional/reference/winograd_kernels.hpp"
#include "support/random.hpp"
#include "support/simd_targets.hpp"

namespace cvattn {
namespace {

using test::for_each_simd_target;

using test::random_vector;

TEST(SimdTargets, NamesAreConsistent) {
  const auto compiled = simd::compiled_targets();
  const auto supported = simd::supported_targets();
  ASSERT_FALSE(compiled.empty());
  ASSERT_FALSE(supported.empty());
  for (const auto& s : supported) {
    EXPECT_NE(std::find(compiled.begin(), compiled.end(), s), compiled.end()) << s;
  }
  // The best target, or the one CVATTN_SIMD caps dispatch at (CI's AVX2 pass on AVX-512 hosts).
  const char* cap = std::getenv("CVATTN_SIMD");
  const std::string want =
      cap == nullptr || std::string(cap) == "best" ? supported.front() : std::string(cap);
  EXPECT_EQ(simd::current_target(), want);
  EXPECT_THROW(simd::set_max_target("avx9000"), ValueError);
  EXPECT_EQ(simd::current_target(), want);
  // A rejected name leaves a cap set in code as it was, too.
  simd::set_max_target(supported.back());
  EXPECT_THROW(simd::set_max_target("avx9000"), ValueError);
  EXPECT_EQ(simd::current_target(), supported.back());
  simd::set_max_target("best");
  EXPECT_EQ(simd::current_target(), supported.front());
}

// Whenever the cap changes the choice of target is made at once, on the calling thread:
// Highway's lazy choice at the first dispatch let two threads dispatching together run different
// targets (SDPA's scratch sized by one target and used by another, found under ASan).
// current_target() leaves the choice in place.
TEST(SimdTargets, ChoiceIsMadeWhenTheCapChanges) {
  EXPECT_TRUE(hwy::GetChosenTarget().IsInitialized());
  for (const auto& t : simd::supported_targets()) {
    test::on_simd_target(t, [&] {
      EXPECT_TRUE(hwy::GetChosenTarget().IsInitialized()) << t;
      EXPECT_EQ(simd::current_target(), t);
      EXPECT_TRUE(hwy::GetChosenTarget().IsInitialized()) << t;
      return 0;
    });
    EXPECT_TRUE(hwy::GetChosenTarget().IsInitialized()) << "restored after " << t;
  }
}

TEST(SimdParity, PlaneMeanMax) {
  // Sizes around the vector groups (up to 64 floats on AVX-512) and the 2048-element block.
  const std::int64_t sizes[] = {1,   3,    15,   16,   17,   63,   64,   65,
                                127, 1000, 2047, 2048, 2049, 5003, 12544};
  for_each_simd_target([&] {
    for (const std::int64_t n : sizes) {
      SCOPED_TRACE("n = " + std::to_string(n));
      // An offset of one float makes the loads unaligned.
      const auto v = random_vector(n + 1, static_cast<std::uint64_t>(n), -2.0f, 3.0f);
      const float* p = v.data() + 1;
      const auto got = detail::plane_mean_max(p, n);
      const auto want = reference::plane_mean_max(p, n);
      EXPECT_NEAR(got.mean, want.mean, 1e-6 + 1e-6 * std::fabs(want.mean));
      EXPECT_EQ(got.max, want.max);
      EXPECT_EQ(detail::plane_mean(p, n), got.mean);
    }
  });
}

TEST(SimdParity, PlaneMeanMaxNonFinite) {
  for_each_simd_target([&] {
    for (const std::int64_t at : {0, 5, 100, 2050}) {
      auto v = random_vector(3001, 7, -1.0f, 1.0f);
      v[static_cast<std::size_t>(at)] = std::numeric_limits<float>::quiet_NaN();
      const auto got = detail::plane_mean_max(v.data(), 3001);
      EXPECT_TRUE(std::isnan(got.mean));
      EXPECT_TRUE(std::isnan(got.max));
      v[static_cast<std::size_t>(at)] = std::numeric_limits<float>::infinity();
      const auto inf = detail::plane_mean_max(v.data(), 3001);
      EXPECT_EQ(inf.max, std::numeric_limits<float>::infinity());
      EXPECT_EQ(inf.mean, std::numeric_limits<float>::infinity());
    }
  });
}

// The hard normaliser's argmax: ties (the first wins), NaN anywhere (it ranks below every
// number), all NaN (index 0), -inf, -0 against +0, lengths around the vector widths.
TEST(SimdParity, FirstMaxIndex) {
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  constexpr float inf = std::numeric_limits<float>::infinity();
  test::Random rng(31);
  for_each_simd_target([&] {
    for (const std::int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 196, 1001}) {
      for (int pattern = 0; pattern < 8; ++pattern) {
        SCOPED_TRACE("n = " + std::to_string(n) + ", pattern " + std::to_string(pattern));
        std::vector<float> v(static_cast<std::size_t>(n + 1));
        for (float& x : v) x = static_cast<float>(static_cast<int>(rng.next() % 7)) - 3.0f;
        float* p = v.data() + 1;  // unaligned
        for (std::int64_t j = 0; j < n; ++j) {
          const std::uint64_t u = rng.next() % 5;
          if (pattern == 1 && u == 0) p[j] = nan;
          if (pattern == 2) p[j] = u == 0 ? -inf : nan;
          if (pattern == 3) p[j] = nan;
          if (pattern == 4) p[j] = u < 2 ? -0.0f : (u < 4 ? 0.0f : nan);
          if (pattern == 5 && j == n - 1) p[j] = inf;
          if (pattern == 6) p[j] = -inf;
          if (pattern == 7 && u == 0) p[j] = 1e30f;
        }
        EXPECT_EQ(detail::first_max_index(p, n), reference::first_max_index(p, n));
      }
    }
  });
}

// --- simd: channel-attention, selective-kernel and dilated-conv kernels ---

// Random sizes with odd values and values that are not multiples of the vector widths.
std::int64_t random_size(test::Random& rng, std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(rng.next() % static_cast<std::uint64_t>(hi - lo + 1));
}

TEST(SimdParity, ScalePlanes) {
  // Plain and streaming stores; an offset of one float makes x, s and y unaligned.
  const std::int64_t sizes[] = {1, 3, 7, 15, 17, 31, 33, 63, 65, 127, 784, 1001, 3137};
  for_each_simd_target([&] {
    for (const std::int64_t n : sizes) {
      for (const bool stream : {false, true}) {
        SCOPED_TRACE("n = " + std::to_string(n) + (stream ? " streaming" : ""));
        const auto x = random_vector(n + 1, static_cast<std::uint64_t>(n), -3.0f, 3.0f);
        const auto s = random_vector(n + 1, static_cast<std::uint64_t>(n) + 99, 0.0f, 1.0f);
        std::vector<float> got(static_cast<std::size_t>(n + 1)), want = got;
        detail::scale_plane(x.data() + 1, got.data() + 1, 0.37f, n, stream);
        if (stream) detail::store_fence();
        reference::scale_plane(x.data() + 1, want.data() + 1, 0.37f, n);
        EXPECT_EQ(got, want);
        detail::scale_plane2(x.data() + 1, got.data() + 1, -1.25f, s.data() + 1, n, stream);
        if (stream) detail::store_fence();
        reference::scale_plane2(x.data() + 1, want.data() + 1, -1.25f, s.data() + 1, n);
        EXPECT_EQ(got, want);
      }
    }
  });
}

TEST(SimdParity, PoolAndScaleManyPlanes) {
  // The SE/ECA sweep: planes of odd sizes (and a 784-float one, SE's 28x28), channels not a
  // multiple of 16, with and without add_maxpool.
  test::Random rng(41);
  for_each_simd_target([&] {
    for (int trial = 0; trial < 12; ++trial) {
      const std::int64_t hw = trial == 0 ? 784 : random_size(rng, 1, 300);
      const std::int64_t count = random_size(rng, 1, 37);
      const bool add_max = trial % 2 == 1, stream = trial % 3 == 2;
      SCOPED_TRACE("hw = " + std::to_string(hw) + ", planes = " + std::to_string(count) +
                   (add_max ? ", add_max" : "") + (stream ? ", streaming" : ""));
      const std::int64_t n = count * hw;
      const auto x = random_vector(n + 1, rng.next(), -3.0f, 3.0f);
      const auto g = random_vector(count, rng.next(), 0.0f, 1.0f);
      std::vector<float> pooled(static_cast<std::size_t>(count)), want_pooled = pooled;
      detail::pool_planes(x.data() + 1, count, hw, add_max, pooled.data());
      reference::pool_planes(x.data() + 1, count, hw, add_max, want_pooled.data());
      for (std::int64_t c = 0; c < count; ++c) {
        const auto i = static_cast<std::size_t>(c);
        EXPECT_NEAR(pooled[i], want_pooled[i], 1e-6 + 1e-6 * std::fabs(want_pooled[i])) << c;
      }
      std::vector<float> y(static_cast<std::size_t>(n + 1)), want_y = y;
      detail::scale_planes(x.data() + 1, y.data() + 1, g.data(), count, hw, stream);
      if (stream) detail::store_fence();
      for (std::int64_t c = 0; c < count; ++c) {
        reference::scale_plane(x.data() + 1 + c * hw, want_y.data() + 1 + c * hw,
                               g[static_cast<std::size_t>(c)], hw);
      }
      EXPECT_EQ(y, want_y);
    }
  });
}

TEST(SimdParity, DotRows) {
  // The gate MLPs' shapes (256 -> 16 -> 256 in SE) and odd ones around the vector groups.
  test::Random rng(43);
  const std::int64_t shapes[][2] = {{16, 256}, {256, 16}, {1, 1},   {3, 7},
                                    {5, 33},   {9, 65},   {2, 127}, {4, 500}};
  for_each_simd_target([&] {
    for (const auto& shape : shapes) {
      const std::int64_t rows = shape[0], cols = shape[1];
      SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
      const auto w = random_vector(rows * cols + 1, rng.next(), -1.0f, 1.0f);
      const auto v = random_vector(cols + 1, rng.next(), -2.0f, 2.0f);
      const auto b = random_vector(rows, rng.next(), -0.5f, 0.5f);
      for (const bool bias : {false, true}) {
        std::vector<float> got(static_cast<std::size_t>(rows)), want = got;
        detail::dot_rows(w.data() + 1, rows, cols, v.data() + 1, bias ? b.data() : nullptr,
                         got.data());
        reference::dot_rows(w.data() + 1, rows, cols, v.data() + 1, bias ? b.data() : nullptr,
                            want.data());
        // Both sum in double: only the order differs, far below float rounding.
        for (std::size_t r = 0; r < got.size(); ++r) {
          EXPECT_NEAR(got[r], want[r], 1e-6f * (1.0f + std::fabs(want[r]))) << r;
        }
      }
    }
  });
}

TEST(SimdParity, AffinePlanes) {
  const std::int64_t sizes[] = {1, 3, 7, 8, 15, 17, 31, 33, 63, 65, 784, 1001, 3137};
  for_each_simd_target([&] {
    for (const std::int64_t n : sizes) {
      SCOPED_TRACE("n = " + std::to_string(n));
      const auto x = random_vector(n + 1, static_cast<std::uint64_t>(n) + 5, -3.0f, 3.0f);
      const auto r = random_vector(n + 1, static_cast<std::uint64_t>(n) + 6, -2.0f, 2.0f);
      for (const bool residual : {false, true}) {
        std::vector<float> got(static_cast<std::size_t>(n + 1)), want = got;
        const float* rp = residual ? r.data() + 1 : nullptr;
        detail::affine_plane(x.data() + 1, got.data() + 1, 0.731f, -0.37f, rp, n);
        reference::affine_plane(x.data() + 1, want.data() + 1, 0.731f, -0.37f, rp, n);
        for (std::int64_t i = 1; i <= n; ++i) {
          const auto u = static_cast<std::size_t>(i);
          // x * a + b with or without an FMA (either may be compiled): a rounding of each
          // partial sum apart.
          const double bound =
              2.4e-7 * (std::fabs(x[u] * 0.731) + 0.37 + (rp ? std::fabs(r[u]) : 0.0));
          EXPECT_NEAR(got[u], want[u], bound) << i << (residual ? " with residual" : "");
        }
      }
    }
  });
}

TEST(SimdParity, ChannelMeanMaxScaled) {
  test::Random rng(17);
  struct Case {
    std::int64_t channels, hw, p0, p1;
  };
  std::vector<Case> cases = {{1, 5, 0, 5}, {4, 9, 0, 9}, {5, 33, 3, 30}, {30, 97, 0, 97}};
  for (int i = 0; i < 8; ++i) {
    const std::int64_t c = random_size(rng, 1, 45), hw = random_size(rng, 1, 300);
    const std::int64_t p0 = random_size(rng, 0, hw - 1), p1 = random_size(rng, p0 + 1, hw);
    cases.push_back({c, hw, p0, p1});
  }
  for_each_simd_target([&] {
    for (const auto& k : cases) {
      SCOPED_TRACE("C = " + std::to_string(k.channels) + ", hw = " + std::to_string(k.hw) +
                   ", pixels [" + std::to_string(k.p0) + ", " + std::to_string(k.p1) + ")");
      auto x = random_vector(k.channels * k.hw, static_cast<std::uint64_t>(k.hw), -2.0f, 2.0f);
      const auto g = random_vector(k.channels, static_cast<std::uint64_t>(k.channels), 0.0f, 1.0f);
      if (k.hw > 20) x[static_cast<std::size_t>((k.channels - 1) * k.hw + k.p0)] = NAN;
      const std::size_t len = static_cast<std::size_t>(k.p1 - k.p0);
      std::vector<float> mean(len), max(len), rmean(len), rmax(len);
      detail::channel_mean_max_scaled(x.data(), g.data(), k.channels, k.hw, k.p0, k.p1, mean.data(),
                                      max.data());
      reference::channel_mean_max_scaled(x.data(), g.data(), k.channels, k.hw, k.p0, k.p1,
                                         rmean.data(), rmax.data());
      for (std::size_t p = 0; p < len; ++p) {
        if (std::isnan(rmean[p])) {
          EXPECT_TRUE(std::isnan(mean[p])) << "at " << p;
          EXPECT_TRUE(std::isnan(max[p])) << "at " << p;
          continue;
        }
        // The same adds in the same (channel) order: bit-identical.
        EXPECT_EQ(mean[p], rmean[p]) << "at " << p;
        EXPECT_EQ(max[p], rmax[p]) << "at " << p;
      }
    }
  });
}

TEST(SimdParity, SpatialConv) {
  test::Random rng(23);
  for_each_simd_target([&] {
    for (int i = 0; i < 8; ++i) {
      const std::int64_t k = 2 * random_size(rng, 0, 3) + 1;  // 1, 3, 5, 7
      const std::int64_t h = random_size(rng, 1, 19), w = random_size(rng, 1, 37);
      SCOPED_TRACE("k = " + std::to_string(k) + ", " + std::to_string(h) + "x" + std::to_string(w));
      const auto in = random_vector(2 * h * w, static_cast<std::uint64_t>(i), -1.0f, 1.0f);
      const auto wt = random_vector(2 * k * k, static_cast<std::uint64_t>(i) + 5, -0.5f, 0.5f);
      std::vector<float> padded(static_cast<std::size_t>(2 * (h + k - 1) * (w + k - 1)));
      detail::pad_planes(in.data(), k, h, w, padded.data());
      std::vector<float> got(static_cast<std::size_t>(h * w)), want = got;
      const std::int64_t row0 = h / 3;
      detail::spatial_conv(padded.data(), wt.data(), k, h, w, row0, h, got.data());
      reference::spatial_conv(padded.data(), wt.data(), k, h, w, row0, h, want.data());
      for (std::int64_t j = row0 * w; j < h * w; ++j) {
        const auto u = static_cast<std::size_t>(j);
        ASSERT_NEAR(got[u], want[u], 1e-5 + 1e-5 * std::fabs(want[u])) << "at " << j;
      }
    }
  });
}

TEST(SimdParity, ReluPathSum) {
  test::Random rng(29);
  for_each_simd_target([&] {
    for (int i = 0; i < 10; ++i) {
      const std::int64_t paths = random_size(rng, 1, 4);
      const std::int64_t hw = i == 0 ? 5003 : random_size(rng, 1, 900);
      const std::int64_t offset = random_size(rng, 0, 3);
      SCOPED_TRACE(std::to_string(paths) + " paths, hw = " + std::to_string(hw));
      std::vector<std::vector<float>> f;
      std::vector<const float*> fp;
      for (std::int64_t p = 0; p < paths; ++p) {
        f.push_back(
            random_vector(hw + offset, static_cast<std::uint64_t>(10 * i + p), -1.0f, 2.0f));
      }
      for (const auto& v : f) fp.push_back(v.data());
      const double got = detail::relu_path_sum(fp.data(), offset, paths, hw);
      const double want = reference::relu_path_sum(fp.data(), offset, paths, hw);
      EXPECT_NEAR(got, want, 1e-5 + 1e-6 * std::fabs(want));
      f[0][static_cast<std::size_t>(offset + hw / 2)] = NAN;
      fp[0] = f[0].data();
      EXPECT_TRUE(std::isnan(detail::relu_path_sum(fp.data(), offset, paths, hw)));
    }
  });
}

// The weighted sum of the paths, bit for bit (products rounded, then added in path order):
// lengths around every vector width, 1-4 paths, strided weights, NaN and negative values
// through the ReLU, and the first path overwritten in place.
TEST(SimdParity, SelectPaths) {
  for_each_simd_target([&] {
    for (const std::int64_t hw : {1, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 63, 65, 784, 3136}) {
      const std::int64_t paths = 1 + hw % 4, offset = hw % 3, w_stride = 5;
      SCOPED_TRACE(std::to_string(paths) + " paths, hw = " + std::to_string(hw));
      std::vector<std::vector<float>> f;
      std::vector<const float*> fp;
      for (std::int64_t p = 0; p < paths; ++p) {
        f.push_back(
            random_vector(hw + offset, static_cast<std::uint64_t>(7 * hw + p), -1.0f, 2.0f));
      }
      f[0][static_cast<std::size_t>(offset + hw / 2)] = NAN;
      for (const auto& v : f) fp.push_back(v.data());
      const auto w = random_vector(paths * w_stride, static_cast<std::uint64_t>(hw), 0.0f, 1.0f);
      std::vector<float> got(static_cast<std::size_t>(hw)), want(got.size());
      detail::select_paths(fp.data(), offset, w.data(), w_stride, paths, hw, got.data());
      reference::select_paths(fp.data(), offset, w.data(), w_stride, paths, hw, want.data());
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << "at " << i;
        if (!std::isnan(want[i])) {
          ASSERT_EQ(got[i], want[i]) << "at " << i;
        }
      }
      // In place over the first path, as selective_kernel_attention's overwrite_first_path.
      auto first = f[0];
      fp[0] = first.data();
      detail::select_paths(fp.data(), offset, w.data(), w_stride, paths, hw, first.data() + offset);
      for (std::size_t i = 0; i < got.size(); ++i) {
        const float v = first[i + static_cast<std::size_t>(offset)];
        ASSERT_EQ(std::isnan(v), std::isnan(want[i])) << "in place at " << i;
        if (!std::isnan(want[i])) {
          ASSERT_EQ(v, want[i]) << "in place at " << i;
        }
      }
    }
  });
}

// Rows of a polyphase split and back: widths around every vector width (56 at d = 2 is 28 groups:
// 16 + 8 + 4 on AVX-512), ragged last groups, strided rows; NaN marks what must stay unwritten.
TEST(SimdParity, PolyphaseRows) {
  test::Random rng(31);
  const auto same = [](const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << "at " << i;
      if (!std::isnan(want[i])) {
        ASSERT_EQ(got[i], want[i]) << "at " << i;
      }
    }
  };
  for_each_simd_target([&] {
    for (const std::int64_t d : {2, 3, 4, 5, 16}) {
      std::vector<std::int64_t> widths = {1, d, 2 * d - 1, 56, 57, 12 * d + 1, 31 * d};
      for (int i = 0; i < 3; ++i) widths.push_back(random_size(rng, 1, 150));
      for (const std::int64_t w : widths) {
        SCOPED_TRACE("d = " + std::to_string(d) + ", w = " + std::to_string(w));
        const std::int64_t rows = 3, wm = (w + d - 1) / d;
        const std::int64_t src_ld = w + 5, sub_ld = wm + 3, out_ld = w + 7;
        const auto src = random_vector(rows * src_ld, static_cast<std::uint64_t>(d * 1000 + w));
        std::vector<std::vector<float>> got(static_cast<std::size_t>(d)), want;
        for (auto& v : got) v.assign(static_cast<std::size_t>(rows * sub_ld), NAN);
        want = got;
        std::vector<float*> gp, wp;
        for (auto& v : got) gp.push_back(v.data());
        for (auto& v : want) wp.push_back(v.data());
        functional::detail::deinterleave_rows(src.data(), src_ld, rows, w, d, gp.data(), sub_ld);
        reference::deinterleave_rows(src.data(), src_ld, rows, w, d, wp.data(), sub_ld);
        for (std::int64_t b = 0; b < d; ++b) same(got[b], want[b]);
        std::vector<float> back(static_cast<std::size_t>(rows * out_ld), NAN), rback = back;
        std::vector<const float*> cp(gp.begin(), gp.end());
        functional::detail::interleave_rows(cp.data(), sub_ld, rows, w, d, back.data(), out_ld);
        reference::interleave_rows(cp.data(), sub_ld, rows, w, d, rback.data(), out_ld);
        same(back, rback);
        for (std::int64_t q = 0; q < rows; ++q) {
          for (std::int64_t x = 0; x < w; ++x) {
            ASSERT_EQ(back[static_cast<std::size_t>(q * out_ld + x)],
                      src[static_cast<std::size_t>(q * src_ld + x)]);
          }
        }
      }
    }
  });
}

Tensor random_tensor(const Shape& shape, std::uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(shape);
  test::Random rng(seed);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data()[i] = rng.uniform(lo, hi);
  return t;
}

void expect_close(const Tensor& got, const Tensor& want, const char* what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  for (std::int64_t i = 0; i < got.numel(); ++i) {
    ASSERT_NEAR(got.data()[i], want.data()[i], 1e-5 + 1e-5 * std::fabs(want.data()[i]))
        << what << " at " << i;
  }
}

// The whole functions built on the kernels above, N > 1 and C not a multiple of 16, on every
// target against the lowest one (EMU128 in a portable build).
TEST(SimdParity, FusedFunctionsAcrossTargets) {
  const std::int64_t n = 3, c = 19, h = 7, w = 11, r = 5;
  const Tensor x = random_tensor({n, c, h, w}, 1, -2.0f, 2.0f);
  functional::SqueezeExcitationWeights se;
  se.fc1_weight = random_tensor({r, c, 1, 1}, 2, -0.5f, 0.5f);
  se.fc1_bias = random_tensor({r}, 3, -0.1f, 0.1f);
  se.fc2_weight = random_tensor({c, r, 1, 1}, 4, -0.5f, 0.5f);
  se.bn_weight = random_tensor({r}, 5, 0.5f, 1.5f);
  se.bn_bias = random_tensor({r}, 6, -0.1f, 0.1f);
  se.bn_mean = random_tensor({r}, 7, -0.1f, 0.1f);
  se.bn_var = random_tensor({r}, 8, 0.5f, 1.5f);
  functional::EcaWeights eca;
  eca.conv_weight = random_tensor({1, 1, 5}, 9, -0.5f, 0.5f);
  functional::CbamWeights cb;
  cb.fc1_weight = se.fc1_weight;
  cb.fc2_weight = se.fc2_weight;
  cb.fc2_bias = random_tensor({c}, 10, -0.1f, 0.1f);
  cb.spatial_weight = random_tensor({1, 2, 7, 7}, 11, -0.2f, 0.2f);
  cb.bn_weight = random_tensor({1}, 12, 0.5f, 1.5f);
  cb.bn_bias = random_tensor({1}, 13, -0.1f, 0.1f);
  cb.bn_mean = random_tensor({1}, 14, -0.1f, 0.1f);
  cb.bn_var = random_tensor({1}, 15, 0.5f, 1.5f);
  const std::vector<Tensor> paths = {random_tensor({n, c, h, w}, 16, -1.0f, 1.0f),
                                     random_tensor({n, c, h, w}, 17, -1.0f, 1.0f),
                                     random_tensor({n, c, h, w}, 18, -1.0f, 1.0f)};
  const Tensor reduce_w = random_tensor({r, c}, 19, -0.5f, 0.5f);
  const Tensor reduce_b = random_tensor({r}, 20, -0.1f, 0.1f);
  const Tensor select_w = random_tensor({3 * c, r}, 21, -0.5f, 0.5f);
  // A dilated 3x3 conv that takes conv2d's polyphase path (stride 1, dilation = padding = 2).
  const Tensor cx = random_tensor({2, 9, 21, 23}, 22, -1.0f, 1.0f);
  const Tensor cw = random_tensor({10, 9, 3, 3}, 23, -0.3f, 0.3f);
  const auto conv_opts = functional::Conv2dOptions().padding(2).dilation(2);

  struct Outputs {
    Tensor se, se_gate, eca, cbam, cbam_spatial, sk, sk_attention, conv;
  };
  auto run = [&] {
    Outputs o;
    auto a = functional::squeeze_excitation(x, se, /*add_maxpool=*/true);
    o.se = a.output;
    o.se_gate = a.gate;
    o.eca = functional::efficient_channel_attention(x, eca, GateLayer::hard_sigmoid).output;
    auto b = functional::cbam(x, cb);
    o.cbam = b.output;
    o.cbam_spatial = b.spatial_gate;
    auto k = functional::selective_kernel_attention(paths, reduce_w, reduce_b, select_w);
    o.sk = k.output;
    o.sk_attention = k.attention;
    o.conv = functional::conv2d(cx, cw, {}, conv_opts);
    return o;
  };
  const Outputs want = test::on_simd_target(simd::supported_targets().back(), run);
  // The polyphase conv against the dilated conv in plain loops (double sums).
  {
    const std::int64_t cn = 2, ci = 9, co = 10, ch = 21, cwid = 23;
    Tensor direct = Tensor::empty({cn, co, ch, cwid});
    for (std::int64_t b = 0; b < cn; ++b) {
      for (std::int64_t o = 0; o < co; ++o) {
        for (std::int64_t i = 0; i < ch; ++i) {
          for (std::int64_t j = 0; j < cwid; ++j) {
            double acc = 0.0;
            for (std::int64_t q = 0; q < ci; ++q) {
              for (std::int64_t u = 0; u < 3; ++u) {
                for (std::int64_t v = 0; v < 3; ++v) {
                  const std::int64_t iy = i + 2 * u - 2, ix = j + 2 * v - 2;
                  if (iy < 0 || iy >= ch || ix < 0 || ix >= cwid) continue;
                  acc += static_cast<double>(cw.data()[((o * ci + q) * 3 + u) * 3 + v]) *
                         cx.data()[((b * ci + q) * ch + iy) * cwid + ix];
                }
              }
            }
            direct.data()[((b * co + o) * ch + i) * cwid + j] = static_cast<float>(acc);
          }
        }
      }
    }
    for (std::int64_t i = 0; i < direct.numel(); ++i) {
      ASSERT_NEAR(want.conv.data()[i], direct.data()[i], 1e-4 + 1e-4 * std::fabs(direct.data()[i]))
          << "conv2d polyphase at " << i;
    }
  }
  for_each_simd_target([&] {
    const Outputs got = run();
    expect_close(got.se, want.se, "squeeze_excitation");
    expect_close(got.se_gate, want.se_gate, "squeeze_excitation gate");
    expect_close(got.eca, want.eca, "efficient_channel_attention");
    expect_close(got.cbam, want.cbam, "cbam");
    expect_close(got.cbam_spatial, want.cbam_spatial, "cbam spatial gate");
    expect_close(got.sk, want.sk, "selective_kernel_attention");
    expect_close(got.sk_attention, want.sk_attention, "selective_kernel_attention weights");
    expect_close(got.conv, want.conv, "conv2d dilated");
  });
}

// The F(4x4, 3x3) weight transform: bit for bit against its twin (no fused multiply-add in
// either), over kernel counts around every vector width, with nothing written between the
// planes' rows or past them; and against U = G g G^T in double precision.
TEST(SimdParity, Winograd43Weights) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const double kG[6][3] = {{1, 0, 0},
                           {1.0 / 3, 1.0 / 3, 1.0 / 3},
                           {-1.0 / 3, 1.0 / 3, -1.0 / 3},
                           {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                           {1.0 / 15, -2.0 / 15, 4.0 / 15},
                           {0, 0, 1}};
  for_each_simd_target([&] {
    for (const std::int64_t count : {1, 3, 4, 5, 8, 15, 16, 17, 31, 33, 64}) {
      SCOPED_TRACE("count = " + std::to_string(count));
      const auto k = random_vector(9 * count, static_cast<std::uint64_t>(count) + 90, -2.0f, 2.0f);
      const std::int64_t plane = count + 5;
      std::vector<float> got(static_cast<std::size_t>(36 * plane), nan), want = got;
      functional::detail::winograd43_weights_rows(k.data(), count, got.data(), plane);
      reference::winograd43_weights_rows(k.data(), count, want.data(), plane);
      for (std::int64_t xi = 0; xi < 36; ++xi) {
        for (std::int64_t c = 0; c < plane; ++c) {
          const auto at = static_cast<std::size_t>(xi * plane + c);
          if (c >= count) {
            ASSERT_TRUE(std::isnan(got[at])) << "written past the kernels: xi " << xi << " c " << c;
            continue;
          }
          ASSERT_EQ(got[at], want[at]) << "xi " << xi << " kernel " << c;
          double exact = 0.0;
          for (int r = 0; r < 3; ++r) {
            for (int s = 0; s < 3; ++s) {
              exact +=
                  kG[xi / 6][r] * k[static_cast<std::size_t>(9 * c + 3 * r + s)] * kG[xi % 6][s];
            }
          }
          ASSERT_NEAR(got[at], exact, 2e-6 * (1.0 + std::fabs(exact))) << "xi " << xi;
        }
      }
    }
  });
}

// Winograd F(4x4, 3x3) transforms: the same sums in the same grouping (only fused or separate
// multiply-adds differ; entries reach ~56 in V and ~150 in Y for values in [-1, 1]), over tile
// counts around every vector width, with the promised slack and nothing written past it.
TEST(SimdParity, Winograd43Transforms) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::int64_t widths[] = {1, 2, 3, 4, 5, 7, 8, 9, 14, 15, 16, 17, 31, 33, 40};
  for_each_simd_target([&] {
    for (const std::int64_t tw : widths) {
      SCOPED_TRACE("tw = " + std::to_string(tw));
      const std::int64_t len = functional::detail::winograd43_row_floats(tw);
      const auto in = random_vector(6 * len, static_cast<std::uint64_t>(tw) + 40, -1.0f, 1.0f);
      const float* rows[6];
      for (int r = 0; r < 6; ++r) rows[r] = in.data() + r * len;
      const std::int64_t step = tw + 32;
      std::vector<float> t(static_cast<std::size_t>(6 * len));
      std::vector<float> v(static_cast<std::size_t>(36 * step), nan), want = v;
      functional::detail::winograd43_input(rows, tw, t.data(), v.data(), step);
      reference::winograd43_input(rows, tw, want.data(), step);
      for (std::int64_t xi = 0; xi < 36; ++xi) {
        for (std::int64_t tx = 0; tx < tw; ++tx) {
          const auto at = static_cast<std::size_t>(xi * step + tx);
          EXPECT_NEAR(v[at], want[at], 2e-5) << "xi " << xi << " tile " << tx;
        }
        for (std::int64_t tx = tw + functional::detail::kWinogradLanes - 1; tx < step; ++tx) {
          EXPECT_TRUE(std::isnan(v[static_cast<std::size_t>(xi * step + tx)]))
              << "written past the slack: xi " << xi << " at " << tx;
        }
      }
      const std::int64_t mstep = tw + 16;
      const auto m =
          random_vector(36 * mstep + 16, static_cast<std::uint64_t>(tw) + 41, -1.0f, 1.0f);
      for (const std::int64_t cut : {0, 1, 3}) {
        for (const std::int64_t rows_out : {4, 3, 1}) {
          const std::int64_t wo = std::max<std::int64_t>(1, 4 * tw - cut);
          const std::int64_t ld = wo + 8;
          std::vector<float> out(static_cast<std::size_t>(5 * ld), nan), ref = out;
          functional::detail::winograd43_output(m.data(), mstep, tw, 0.25f, out.data(), ld,
                                                rows_out, wo);
          reference::winograd43_output(m.data(), mstep, tw, 0.25f, ref.data(), ld, rows_out, wo);
          for (std::int64_t i = 0; i < 5 * ld; ++i) {
            const auto u = static_cast<std::size_t>(i);
            if (std::isnan(ref[u])) {
              EXPECT_TRUE(std::isnan(out[u])) << "written outside the tiles at " << i;
            } else {
              EXPECT_NEAR(out[u], ref[u], 2e-4)
                  << "wo " << wo << " rows " << rows_out << " at " << i;
            }
          }
        }
      }
    }
    // The input rows copied and bounded in one pass: rows of every length around the vector
    // widths, strided source and destination, NaN and infinity in a vector and in a row's tail.
    // Tails of 8 and 4 lanes and single floats: 28 = 16 + 8 + 4 on AVX-512, 29 and 63 end in
    // every step of the cascade; a bad value also one before a row's end.
    for (const std::int64_t cols : {1, 3, 4, 7, 8, 12, 15, 16, 17, 24, 28, 29, 56, 63}) {
      const std::int64_t rows = 5, src_ld = cols + 3, dst_ld = cols + 21;
      auto src = random_vector(rows * src_ld, static_cast<std::uint64_t>(cols) + 43, -3.0f, 2.0f);
      const std::int64_t first = 2 * src_ld, last = 3 * src_ld + cols - 1;
      const std::int64_t before = 3 * src_ld + std::max<std::int64_t>(0, cols - 2);
      const std::pair<std::int64_t, float> bad[] = {
          {-1, 0.0f},        {first, nan},         {first, -HUGE_VALF}, {last, nan},
          {last, HUGE_VALF}, {before, -HUGE_VALF}, {before, nan}};
      for (const auto& [bad_at, value] : bad) {
        auto x = src;
        if (bad_at >= 0) x[static_cast<std::size_t>(bad_at)] = value;
        std::vector<float> got(static_cast<std::size_t>(rows * dst_ld), nan), want = got;
        const float top = functional::detail::winograd_copy_rows(x.data(), src_ld, rows, cols,
                                                                 got.data(), dst_ld);
        EXPECT_EQ(top,
                  reference::winograd_copy_rows(x.data(), src_ld, rows, cols, want.data(), dst_ld))
            << "cols " << cols << " bad at " << bad_at;
        for (std::size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(std::isnan(got[i]), std::isnan(want[i])) << "cols " << cols << " at " << i;
          if (!std::isnan(want[i])) {
            ASSERT_EQ(got[i], want[i]) << "cols " << cols << " at " << i;
          }
        }
      }
    }
  });
}

// max_pool2d / avg_pool2d planes and the adaptive pools' row folds: maxima are exact and sums are
// added in the same order per element, so the values must be equal (NaN where the reference has
// NaN).
TEST(SimdParity, RowColumnMeans) {
  // strip_pool's plane: widths below, at and between the 4-float steps, a NaN, h = 1; rows past
  // one 64-row chunk, widths past one 16-column block with vectors and floats left over.
  const std::int64_t shapes[][2] = {{28, 28}, {1, 1},  {3, 3},   {5, 4},   {7, 9},   {1, 13},
                                    {17, 2},  {9, 33}, {64, 64}, {70, 45}, {130, 36}};
  for_each_simd_target([&] {
    std::uint64_t seed = 90;
    for (const auto& shape : shapes) {
      const std::int64_t h = shape[0], w = shape[1];
      SCOPED_TRACE(testing::Message() << h << "x" << w);
      auto x = random_vector(h * w, seed++, -3.0f, 3.0f);
      if (h * w > 8) x[7] = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> rows(static_cast<std::size_t>(h)), want_rows = rows;
      std::vector<float> cols(static_cast<std::size_t>(w), 9.0f), want_cols = cols;
      functional::detail::row_column_means(x.data(), h, w, rows.data(), cols.data());
      reference::row_column_means(x.data(), h, w, want_rows.data(), want_cols.data());
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (std::isnan(want_rows[i])) {
          EXPECT_TRUE(std::isnan(rows[i])) << "row " << i;
        } else {
          EXPECT_EQ(rows[i], want_rows[i]) << "row " << i;
        }
      }
      for (std::size_t i = 0; i < cols.size(); ++i) {
        if (std::isnan(want_cols[i])) {
          EXPECT_TRUE(std::isnan(cols[i])) << "column " << i;
        } else {
          EXPECT_EQ(cols[i], want_cols[i]) << "column " << i;
        }
      }
    }
  });
}

TEST(SimdParity, PoolPlanes) {
  struct Case {
    std::int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw;
    bool ceil;
  };
  const Case cases[] = {
      {56, 56, 3, 3, 2, 2, 1, 1, 1, 1, false}, {7, 9, 2, 2, 2, 2, 0, 0, 1, 1, false},
      {13, 37, 3, 3, 1, 1, 1, 1, 1, 1, false}, {11, 35, 3, 3, 2, 2, 1, 1, 1, 1, true},
      {9, 70, 4, 5, 3, 3, 2, 2, 1, 1, true},   {12, 33, 3, 3, 2, 2, 1, 1, 2, 2, false},
      {5, 17, 1, 1, 1, 1, 0, 0, 1, 1, false},  {6, 64, 2, 3, 1, 2, 1, 1, 1, 3, true},
  };
  const auto pooled = [](std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t p,
                         std::int64_t d, bool ceil) {
    const std::int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
    std::int64_t out = num / s + 1;
    if (ceil && (out - 1) * s >= in + p) --out;
    return out;
  };
  for_each_simd_target([&] {
    std::uint64_t seed = 60;
    for (const Case& k : cases) {
      SCOPED_TRACE(testing::Message() << k.h << "x" << k.w << " kernel " << k.kh << "x" << k.kw
                                      << " stride " << k.sh << "x" << k.sw);
      functional::detail::PoolPlane g{};
      g.h = k.h, g.w = k.w, g.kh = k.kh, g.kw = k.kw, g.sh = k.sh, g.sw = k.sw;
      g.ph = k.ph, g.pw = k.pw, g.dh = k.dh, g.dw = k.dw;
      g.ho = pooled(k.h, k.kh, k.sh, k.ph, k.dh, k.ceil);
      g.wo = pooled(k.w, k.kw, k.sw, k.pw, k.dw, k.ceil);
      g.buffer = std::max(k.w + 2 * k.pw, (g.wo - 1) * k.sw + (k.kw - 1) * k.dw + 1);
      auto x = random_vector(k.h * k.w, seed++, -3.0f, 3.0f);
      x[static_cast<std::size_t>(k.w + 1)] = std::numeric_limits<float>::quiet_NaN();
      std::vector<float> row(static_cast<std::size_t>(g.buffer));
      std::vector<float> out(static_cast<std::size_t>(g.ho * g.wo)), want = out;
      functional::detail::max_pool_plane(x.data(), g, row.data(), out.data());
      reference::max_pool_plane(x.data(), g, want.data());
      for (std::size_t i = 0; i < out.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(out[i])) << "at " << i;
        } else {
          EXPECT_EQ(out[i], want[i]) << "at " << i;
        }
      }
      if (k.dh == 1 && k.dw == 1) {  // avg_pool2d: the same sums in the same order, divided
        std::vector<float> rc(static_cast<std::size_t>(g.ho)), cc(static_cast<std::size_t>(g.wo));
        for (std::int64_t oy = 0; oy < g.ho; ++oy) {
          const std::int64_t lo = std::max<std::int64_t>(0, oy * k.sh - k.ph);
          const std::int64_t hi = std::min(k.h, oy * k.sh - k.ph + k.kh);
          rc[static_cast<std::size_t>(oy)] = static_cast<float>(std::max<std::int64_t>(0, hi - lo));
        }
        for (std::int64_t ox = 0; ox < g.wo; ++ox) {
          const std::int64_t lo = std::max<std::int64_t>(0, ox * k.sw - k.pw);
          const std::int64_t hi = std::min(k.w, ox * k.sw - k.pw + k.kw);
          cc[static_cast<std::size_t>(ox)] = static_cast<float>(std::max<std::int64_t>(0, hi - lo));
        }
        for (const float divisor : {0.0f, 3.0f}) {
          std::vector<float> scratch(static_cast<std::size_t>(g.buffer + g.wo));
          functional::detail::avg_pool_plane(x.data(), g, rc.data(), cc.data(), divisor,
                                             scratch.data(), out.data());
          reference::avg_pool_plane(x.data(), g, rc.data(), cc.data(), divisor, want.data());
          for (std::size_t i = 0; i < out.size(); ++i) {
            if (std::isnan(want[i])) {
              EXPECT_TRUE(std::isnan(out[i])) << "avg at " << i;
            } else {
              EXPECT_EQ(out[i], want[i]) << "avg, divisor " << divisor << ", at " << i;
            }
          }
        }
      }
      for (const bool max : {true, false}) {
        std::vector<float> acc(static_cast<std::size_t>(k.w), 0.5f), ref = acc;
        functional::detail::fold_rows(max, x.data(), k.w, 1, k.h, acc.data());
        reference::fold_rows(max, x.data(), k.w, 1, k.h, ref.data());
        for (std::size_t i = 0; i < acc.size(); ++i) {
          if (std::isnan(ref[i])) {
            EXPECT_TRUE(std::isnan(acc[i])) << "at " << i;
          } else {
            EXPECT_EQ(acc[i], ref[i]) << (max ? "max" : "sum") << " at " << i;
          }
        }
      }
    }
  });
}

namespace {

// An axis of interpolate taps as functional/interpolate.cpp builds them: from a step between
// source coordinates, clamped, rising with the output and with the tap.
struct TestAxis {
  int k;
  std::int64_t n;
  std::vector<std::int32_t> index;
  std::vector<float> weight;
  functional::detail::InterpAxis view() const { return {k, n, index.data(), weight.data()}; }
};

TestAxis test_axis(int k, std::int64_t in, std::int64_t n, std::uint64_t seed) {
  TestAxis a{k, n, std::vector<std::int32_t>(static_cast<std::size_t>(k * n)),
             random_vector(k * n, seed, -1.0f, 1.0f)};
  const double step = static_cast<double>(in) / static_cast<double>(n);
  for (std::int64_t o = 0; o < n; ++o) {
    const auto i0 = static_cast<std::int64_t>(std::floor(step * static_cast<double>(o)));
    for (int j = 0; j < k; ++j) {
      const std::int64_t first = k == 4 ? i0 - 1 : i0;
      a.index[static_cast<std::size_t>(j * n + o)] =
          static_cast<std::int32_t>(std::clamp<std::int64_t>(first + j, 0, in - 1));
    }
  }
  return a;
}

}  // namespace

// interpolate's plane kernel: the same sums in the same order as the plain loops (a target with
// FMA may fuse a multiply into the add after it: GCC contracts C++ by default), so within a few
// roundings of the summed magnitudes; nearest (one tap) exactly. Along W: up and level (one
// window of lanes, also rows shorter than a vector), down to half (two windows) and further (the
// scalar loop); along H 1, 2 or 4 rows; widths around the vector sizes.
TEST(SimdParity, InterpolatePlanes) {
  const std::int64_t widths[] = {1, 3, 5, 8, 13, 16, 17, 56, 100};
  const double steps[] = {0.1, 0.25, 0.5, 0.77, 1.0, 1.6, 1.9, 2.0, 3.0};
  for_each_simd_target([&] {
    for (const int k : {1, 2, 4}) {
      for (const std::int64_t w : widths) {
        for (const double step : steps) {
          const std::int64_t h = w % 7 + 2;
          const auto ow = std::max<std::int64_t>(1, static_cast<std::int64_t>(w / step));
          const std::int64_t oh = 2 * h + 1;
          SCOPED_TRACE(testing::Message()
                       << k << " taps, [" << h << "," << w << "] -> [" << oh << "," << ow << "]");
          const TestAxis tx = test_axis(k, w, ow, static_cast<std::uint64_t>(ow) + 91);
          const TestAxis ty = test_axis(k, h, oh, static_cast<std::uint64_t>(oh) + 93);
          std::vector<unsigned char> used(static_cast<std::size_t>(h), 0);
          for (const auto r : ty.index) used[static_cast<std::size_t>(r)] = 1;
          // Two planes: the second starts where the first ends.
          const auto in = random_vector(2 * h * w, static_cast<std::uint64_t>(w) + 92, -2.0f, 2.0f);
          std::vector<float> tmp(static_cast<std::size_t>(h * ow)), ref_tmp = tmp;
          std::vector<float> out(static_cast<std::size_t>(2 * oh * ow)), ref = out;
          if (k == 1) {
            // Nearest copies: exact, and it reads neither used nor tmp.
            functional::detail::interp_planes(in.data(), 2, h, w, tx.view(), ty.view(), nullptr,
                                              nullptr, out.data());
            reference::interp_planes(in.data(), 2, h, w, tx.view(), ty.view(), nullptr, nullptr,
                                     ref.data());
            EXPECT_EQ(out, ref);
            continue;
          }
          functional::detail::interp_planes(in.data(), 2, h, w, tx.view(), ty.view(), used.data(),
                                            tmp.data(), out.data());
          reference::interp_planes(in.data(), 2, h, w, tx.view(), ty.view(), used.data(),
                                   ref_tmp.data(), ref.data());
          // Per plane, the magnitude of each W-pass value, then of each output.
          for (std::int64_t pl = 0; pl < 2; ++pl) {
            const float* plane = in.data() + pl * h * w;
            std::vector<double> mag_tmp(static_cast<std::size_t>(h * ow), 0.0);
            for (std::int64_t r = 0; r < h; ++r) {
              for (std::int64_t x = 0; x < ow; ++x) {
                for (int j = 0; j < k; ++j) {
                  const auto at = static_cast<std::size_t>(j * ow + x);
                  mag_tmp[static_cast<std::size_t>(r * ow + x)] +=
                      std::fabs(tx.weight[at] * plane[r * w + tx.index[at]]);
                }
              }
            }
            for (std::int64_t o = 0; o < oh; ++o) {
              for (std::int64_t x = 0; x < ow; ++x) {
                double mag = 0.0;
                for (int j = 0; j < k; ++j) {
                  const auto at = static_cast<std::size_t>(j * oh + o);
                  mag += std::fabs(ty.weight[at]) *
                         mag_tmp[static_cast<std::size_t>(ty.index[at] * ow + x)];
                }
                const auto u = static_cast<std::size_t>((pl * oh + o) * ow + x);
                EXPECT_NEAR(out[u], ref[u], 1e-6 * mag)
                    << "plane " << pl << ", row " << o << ", column " << x;
              }
            }
          }
        }
      }
    }
  });
}

// layer_norm / group_norm rows: moments within a few float roundings of the blocked lane sum
// (the order is the same; only a fused or separate multiply-add differs), the normalised row
// within a rounding of each product; NaN anywhere gives NaN.
TEST(SimdParity, NormRows) {
  const std::int64_t sizes[] = {1, 3, 7, 8, 15, 16, 17, 31, 33, 96, 384, 1023, 1025, 2049, 6273};
  for_each_simd_target([&] {
    for (const std::int64_t n : sizes) {
      SCOPED_TRACE("n = " + std::to_string(n));
      // An offset of 3 so that the two-pass variance matters.
      const auto x = random_vector(n + 1, static_cast<std::uint64_t>(n) + 11, 1.0f, 5.0f);
      const auto w = random_vector(n + 1, static_cast<std::uint64_t>(n) + 12, -2.0f, 2.0f);
      const auto b = random_vector(n + 1, static_cast<std::uint64_t>(n) + 13, -1.0f, 1.0f);
      const functional::detail::Moments got = functional::detail::moments(x.data() + 1, n, 1e-5);
      const functional::detail::Moments want = reference::moments(x.data() + 1, n, 1e-5);
      EXPECT_NEAR(got.mean, want.mean, 1e-6 * std::fabs(want.mean));
      EXPECT_NEAR(got.rstd, want.rstd, 1e-5 * std::fabs(want.rstd));
      for (int mode = 0; mode < 4; ++mode) {
        const float* wp = (mode & 1) ? w.data() + 1 : nullptr;
        const float* bp = (mode & 2) ? b.data() + 1 : nullptr;
        std::vector<float> out(static_cast<std::size_t>(n + 1)), ref = out;
        functional::detail::normalize_row(x.data() + 1, out.data() + 1, n, want, wp, bp);
        reference::normalize_row(x.data() + 1, ref.data() + 1, n, want, wp, bp);
        for (std::int64_t i = 1; i <= n; ++i) {
          const auto u = static_cast<std::size_t>(i);
          const double z = std::fabs(static_cast<double>(x[u]) * want.rstd) +
                           std::fabs(static_cast<double>(want.mean) * want.rstd);
          const double bound = 3e-7 * (z * (wp ? std::fabs(w[u]) : 1.0) + (bp ? 1.0 : 0.0));
          EXPECT_NEAR(out[u], ref[u], bound) << "mode " << mode << " at " << i;
        }
      }
    }
    std::vector<float> x(40, 1.0f);
    x[37] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(functional::detail::moments(x.data(), 40, 1e-5).rstd));
  });
}

// layer_norm's rows, two at a time: bit for bit the moments and normalize_row of each row on the
// same target (the pairing changes no sum), and near the reference twin; odd row counts take
// the single-row path for the last row.
TEST(SimdParity, LayerNormRows) {
  const std::int64_t sizes[] = {1, 7, 16, 17, 96, 384, 1025, 2049};
  for_each_simd_target([&] {
    for (const std::int64_t n : sizes) {
      for (const std::int64_t rows : {1, 2, 3, 6}) {
        SCOPED_TRACE("n = " + std::to_string(n) + ", rows = " + std::to_string(rows));
        const auto x =
            random_vector(rows * n + 1, static_cast<std::uint64_t>(n + rows), 1.0f, 5.0f);
        const auto w = random_vector(n, 7, -2.0f, 2.0f), b = random_vector(n, 8, -1.0f, 1.0f);
        for (const bool affine : {false, true}) {
          const float* wp = affine ? w.data() : nullptr;
          const float* bp = affine ? b.data() : nullptr;
          std::vector<float> got(x.size()), each(x.size()), ref(x.size());
          functional::detail::layer_norm_rows(x.data() + 1, got.data() + 1, rows, n, wp, bp, 1e-5);
          reference::layer_norm_rows(x.data() + 1, ref.data() + 1, rows, n, wp, bp, 1e-5);
          for (std::int64_t r = 0; r < rows; ++r) {
            const float* row = x.data() + 1 + r * n;
            functional::detail::normalize_row(row, each.data() + 1 + r * n, n,
                                              functional::detail::moments(row, n, 1e-5), wp, bp);
          }
          EXPECT_EQ(0, std::memcmp(got.data() + 1, each.data() + 1,
                                   static_cast<std::size_t>(rows * n) * sizeof(float)));
          // Within a few roundings of x * rstd - mean * rstd (which cancel where the variance is
          // ~0: n == 1), then of the affine step.
          for (std::int64_t r = 0; r < rows; ++r) {
            const auto m = reference::moments(x.data() + 1 + r * n, n, 1e-5);
            for (std::int64_t i = 0; i < n; ++i) {
              const auto u = static_cast<std::size_t>(1 + r * n + i);
              const double z = (std::fabs(x[u]) + std::fabs(m.mean)) * m.rstd;
              const double bound = 1e-6 * (z * (wp ? std::fabs(wp[i]) : 1.0) + 1.0);
              EXPECT_NEAR(got[u], ref[u], bound) << "row " << r << ", element " << i;
            }
          }
        }
      }
    }
  });
}

// layer_norm2d tiles: the same sums in the same order (double accumulation over channels), so
// only fused or separate multiply-adds in the last step differ.
TEST(SimdParity, LayerNorm2dTiles) {
  struct Case {
    std::int64_t c, hw, len;
  };
  const Case cases[] = {{1, 5, 5},      {3, 7, 7},    {16, 64, 64}, {33, 100, 36},
                        {96, 3136, 64}, {17, 49, 17}, {768, 49, 49}};
  for_each_simd_target([&] {
    for (const Case& k : cases) {
      SCOPED_TRACE(testing::Message() << "c " << k.c << " hw " << k.hw << " len " << k.len);
      const auto x =
          random_vector(k.c * k.hw + 1, static_cast<std::uint64_t>(k.c + k.hw), -2.0f, 4.0f);
      const auto w = random_vector(k.c, 3, -2.0f, 2.0f), b = random_vector(k.c, 4, -1.0f, 1.0f);
      for (const bool affine : {false, true}) {
        std::vector<float> got(x.size()), want(x.size());
        const float* wp = affine ? w.data() : nullptr;
        const float* bp = affine ? b.data() : nullptr;
        functional::detail::layer_norm2d_tile(x.data() + 1, got.data() + 1, k.c, k.hw, k.len, wp,
                                              bp, 1e-6);
        reference::layer_norm2d_tile(x.data() + 1, want.data() + 1, k.c, k.hw, k.len, wp, bp, 1e-6);
        for (std::int64_t p = 0; p < k.len; ++p) {
          // A rounding of each product of x * rstd - mean * rstd (which cancel when the
          // variance is ~0: c == 1), then of the affine step.
          double sum = 0.0, ss = 0.0;
          for (std::int64_t ch = 0; ch < k.c; ++ch)
            sum += x[static_cast<std::size_t>(1 + ch * k.hw + p)];
          const double mean = sum / static_cast<double>(k.c);
          for (std::int64_t ch = 0; ch < k.c; ++ch) {
            const double dv = x[static_cast<std::size_t>(1 + ch * k.hw + p)] - mean;
            ss += dv * dv;
          }
          const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(k.c) + 1e-6);
          for (std::int64_t ch = 0; ch < k.c; ++ch) {
            const auto u = static_cast<std::size_t>(1 + ch * k.hw + p);
            const double z = (std::fabs(x[u]) + std::fabs(mean)) * rstd;
            const double wv = affine ? std::fabs(w[static_cast<std::size_t>(ch)]) : 1.0;
            EXPECT_NEAR(got[u], want[u], 3e-7 * (z * wv + 1.0) + 1e-6 * std::fabs(want[u]))
                << ch << ", " << p;
          }
        }
      }
    }
  });
}

TEST(GemmParity, AllTransposesAndStrides) {
  struct Case {
    std::int64_t m, n, k;
  };
  const Case cases[] = {{1, 1, 1}, {7, 5, 3}, {64, 49, 576}, {33, 197, 64}, {130, 17, 257}};
  for (const auto& c : cases) {
    for (const auto ta : {detail::Trans::no, detail::Trans::yes}) {
      for (const auto tb : {detail::Trans::no, detail::Trans::yes}) {
        for (const float beta : {0.0f, 1.0f, 0.5f}) {
          SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.n) + "x" + std::to_string(c.k));
          const std::int64_t lda = (ta == detail::Trans::no ? c.k : c.m) + 3;
          const std::int64_t ldb = (tb == detail::Trans::no ? c.n : c.k) + 2;
          const std::int64_t ldc = c.n + 5;
          const std::int64_t a_rows = ta == detail::Trans::no ? c.m : c.k;
          const std::int64_t b_rows = tb == detail::Trans::no ? c.k : c.n;
          const auto a = random_vector(a_rows * lda, 1, -1, 1);
          const auto b = random_vector(b_rows * ldb, 2, -1, 1);
          auto got = random_vector(c.m * ldc, 3, -1, 1);
          auto want = got;
          detail::sgemm(ta, tb, c.m, c.n, c.k, 0.75f, a.data(), lda, b.data(), ldb, beta,
                        got.data(), ldc);
          detail::sgemm_eigen(ta, tb, c.m, c.n, c.k, 0.75f, a.data(), lda, b.data(), ldb, beta,
                              want.data(), ldc);
          for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-4 + 1e-4 * std::fabs(want[i])) << "at " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace cvattn

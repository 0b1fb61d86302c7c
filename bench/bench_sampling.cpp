// grid_sample / affine_grid / grid_sample_backward, and cv::remap doing the same bilinear
// sampling in the same binary so the ratio comes from one run. The argument is the thread count.
//
// Shapes: [1,64,128,128] and [8,3,224,224] with a same-size grid from a mild rotation + scale
// theta (10 degrees, 0.9, small shift), align_corners=false, padding zeros; the zoom_out rows
// scale by 2.0 instead, so three quarters of the samples fall outside the image (a spatial
// transformer that shrinks its input: the edge path of the kernel). Counter GB/s:
// bytes of input + grid + output per call (what the sampling must at least move).
#include <benchmark/benchmark.h>

#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <vector>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/sampling.hpp"
#include "support/random.hpp"

namespace {

namespace F = cvattn::functional;
using cvattn::Shape;
using cvattn::Tensor;

Tensor mild_theta(std::int64_t n, double s = 0.9) {
  const double a = 10.0 * M_PI / 180.0;
  Tensor theta = Tensor::empty({n, 2, 3});
  for (std::int64_t i = 0; i < n; ++i) {
    float* t = theta.data() + i * 6;
    t[0] = static_cast<float>(s * std::cos(a));
    t[1] = static_cast<float>(-s * std::sin(a));
    t[2] = 0.05f;
    t[3] = static_cast<float>(s * std::sin(a));
    t[4] = static_cast<float>(s * std::cos(a));
    t[5] = -0.03f;
  }
  return theta;
}

Shape shape_of(const benchmark::State& state) {
  return {state.range(1), state.range(2), state.range(3), state.range(4)};
}

void set_threads(const benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  cv::setNumThreads(static_cast<int>(state.range(0)));
}

void BM_GridSample(benchmark::State& state, F::Interpolation mode, double scale) {
  set_threads(state);
  const Shape shape = shape_of(state);
  const Tensor input = cvattn::test::random_tensor(shape, 1);
  const Tensor grid = F::affine_grid(mild_theta(shape[0], scale), shape);
  const auto opt = F::GridSampleOptions().mode(mode);
  for (auto _ : state) benchmark::DoNotOptimize(F::grid_sample(input, grid, opt).data());
  // Read input and grid, write an output of the input's size.
  cvattn::bench::set_bytes(
      state, 2.0 * static_cast<double>(input.nbytes()) + static_cast<double>(grid.nbytes()));
}

void BM_GridSampleBackward(benchmark::State& state, F::Interpolation mode) {
  set_threads(state);
  const Shape shape = shape_of(state);
  const Tensor input = cvattn::test::random_tensor(shape, 1);
  const Tensor grid = F::affine_grid(mild_theta(shape[0]), shape);
  const Tensor gout = cvattn::test::random_tensor(shape, 2);
  const auto opt = F::GridSampleOptions().mode(mode);
  for (auto _ : state) {
    benchmark::DoNotOptimize(F::grid_sample_backward(input, grid, gout, opt).grad_input.data());
  }
}

void BM_AffineGrid(benchmark::State& state) {
  set_threads(state);
  const Shape shape = shape_of(state);
  const Tensor theta = mild_theta(shape[0]);
  for (auto _ : state) benchmark::DoNotOptimize(F::affine_grid(theta, shape).data());
  // Writes [N, H, W, 2] floats.
  cvattn::bench::set_bytes(state, 8.0 * static_cast<double>(shape[0] * shape[2] * shape[3]));
}

// cv::remap with float maps built from the same grid (align_corners=false unnormalisation),
// INTER_LINEAR, BORDER_CONSTANT 0, on channel-interleaved copies of the input made beforehand:
// 4 channels per remap (CV_32FC4; CV_32FC3 for C = 3), so 16 remaps per image for C = 64. Only
// the remaps are timed.
void BM_CvRemap(benchmark::State& state) {
  set_threads(state);
  const Shape shape = shape_of(state);
  const auto [n, c, h, w] = std::array<std::int64_t, 4>{shape[0], shape[1], shape[2], shape[3]};
  const Tensor input = cvattn::test::random_tensor(shape, 1);
  const Tensor grid = F::affine_grid(mild_theta(n), shape);
  const int group = c % 4 == 0 ? 4 : static_cast<int>(c);
  std::vector<cv::Mat> planes, outs, map_x, map_y;
  for (std::int64_t i = 0; i < n; ++i) {
    cv::Mat mx(static_cast<int>(h), static_cast<int>(w), CV_32F);
    cv::Mat my(static_cast<int>(h), static_cast<int>(w), CV_32F);
    const float* g = grid.data() + i * h * w * 2;
    for (std::int64_t p = 0; p < h * w; ++p) {
      mx.ptr<float>()[p] = ((g[2 * p] + 1) * static_cast<float>(w) - 1) / 2;
      my.ptr<float>()[p] = ((g[2 * p + 1] + 1) * static_cast<float>(h) - 1) / 2;
    }
    map_x.push_back(mx);
    map_y.push_back(my);
    for (std::int64_t c0 = 0; c0 < c; c0 += group) {
      std::vector<cv::Mat> chans;
      for (int k = 0; k < group; ++k) chans.push_back(input.plane(i, c0 + k));
      cv::Mat merged;
      cv::merge(chans, merged);
      planes.push_back(merged);
      outs.emplace_back();
    }
  }
  const std::int64_t per_image = c / group;
  for (auto _ : state) {
    for (std::size_t k = 0; k < planes.size(); ++k) {
      const std::size_t i = k / static_cast<std::size_t>(per_image);
      cv::remap(planes[k], outs[k], map_x[i], map_y[i], cv::INTER_LINEAR, cv::BORDER_CONSTANT,
                cv::Scalar::all(0));
    }
    benchmark::DoNotOptimize(outs.back().data);
  }
  cvattn::bench::set_bytes(
      state, 2.0 * static_cast<double>(input.nbytes()) + static_cast<double>(grid.nbytes()));
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"threads", "N", "C", "H", "W"});
  for (const int threads : {1, cvattn::bench::all_threads()}) {
    b->Args({threads, 1, 64, 128, 128});
    b->Args({threads, 8, 3, 224, 224});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_GridSample, bilinear, F::Interpolation::bilinear, 0.9)->Apply(shapes);
BENCHMARK_CAPTURE(BM_GridSample, bilinear_zoom_out, F::Interpolation::bilinear, 2.0)->Apply(shapes);
BENCHMARK(BM_CvRemap)->Apply(shapes);
BENCHMARK_CAPTURE(BM_GridSample, nearest, F::Interpolation::nearest, 0.9)->Apply(shapes);
BENCHMARK_CAPTURE(BM_GridSample, bicubic, F::Interpolation::bicubic, 0.9)->Apply(shapes);
BENCHMARK(BM_AffineGrid)->Apply(shapes);
BENCHMARK_CAPTURE(BM_GridSampleBackward, bilinear, F::Interpolation::bilinear)->Apply(shapes);
BENCHMARK_CAPTURE(BM_GridSampleBackward, nearest, F::Interpolation::nearest)->Apply(shapes);
BENCHMARK_CAPTURE(BM_GridSampleBackward, bicubic, F::Interpolation::bicubic)->Apply(shapes);

}  // namespace

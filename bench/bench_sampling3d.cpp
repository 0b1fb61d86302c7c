// Volumetric grid_sample (trilinear and nearest), its backward, and 3-D affine_grid on
// [1, 16, 32, 32, 32] (a small medical / video volume) with a mild rotation + scale theta.
// Arg = threads (cvattn::set_num_threads). Counter "GB/s": input + grid read, output written.
#include <benchmark/benchmark.h>

#include <cmath>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/sampling.hpp"
#include "cvattn/functional/sampling3d.hpp"
#include "support/random.hpp"

using cvattn::Shape;
using cvattn::Tensor;
namespace F = cvattn::functional;

namespace {

const Shape kShape = {1, 16, 32, 32, 32};

// A 10 degree rotation about z, scale 0.9, a small shift, for every sample of the batch.
Tensor mild_theta3d(std::int64_t n) {
  const float a = 10.0f * 3.14159265f / 180.0f, s = 0.9f;
  std::vector<float> v;
  for (std::int64_t i = 0; i < n; ++i) {
    const float t[12] = {s * std::cos(a),
                         -s * std::sin(a),
                         0,
                         0.05f,
                         s * std::sin(a),
                         s * std::cos(a),
                         0,
                         -0.03f,
                         0,
                         0,
                         s,
                         0.02f};
    v.insert(v.end(), t, t + 12);
  }
  return Tensor::from_vector({n, 3, 4}, v);
}

void BM_GridSample3d(benchmark::State& state, F::Interpolation mode) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor input = cvattn::test::random_tensor(kShape, 1);
  const Tensor grid = F::affine_grid(mild_theta3d(kShape[0]), kShape);
  const auto opt = F::GridSampleOptions().mode(mode);
  for (auto _ : state) benchmark::DoNotOptimize(F::grid_sample(input, grid, opt).data());
  cvattn::bench::set_bytes(
      state, 2.0 * static_cast<double>(input.nbytes()) + static_cast<double>(grid.nbytes()));
}

void BM_GridSample3dBackward(benchmark::State& state, F::Interpolation mode) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor input = cvattn::test::random_tensor(kShape, 1);
  const Tensor grid = F::affine_grid(mild_theta3d(kShape[0]), kShape);
  const Tensor gout = cvattn::test::random_tensor(kShape, 2);
  const auto opt = F::GridSampleOptions().mode(mode);
  for (auto _ : state) {
    benchmark::DoNotOptimize(F::grid_sample_backward(input, grid, gout, opt).grad_input.data());
  }
}

void BM_AffineGrid3d(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor theta = mild_theta3d(kShape[0]);
  for (auto _ : state) benchmark::DoNotOptimize(F::affine_grid(theta, kShape).data());
  cvattn::bench::set_bytes(state, 4.0 * 3 * 32 * 32 * 32);
}

}  // namespace

BENCHMARK_CAPTURE(BM_GridSample3d, trilinear, F::Interpolation::bilinear)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_GridSample3d, nearest, F::Interpolation::nearest)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_GridSample3dBackward, trilinear, F::Interpolation::bilinear)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(BM_GridSample3dBackward, nearest, F::Interpolation::nearest)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_AffineGrid3d)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

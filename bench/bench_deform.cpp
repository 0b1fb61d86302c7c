// deform_conv2d at a ResNet stage-2 shape: [1, 64, 56, 56], 3x3, 64 -> 64, padding 1, offsets of
// about a pixel; DCNv2 (with mask) and DCNv1 (without). Arg = threads (cvattn::set_num_threads).
// For comparison, plain conv2d (im2col path is not forced: it may use Winograd) at the same shape
// is in bench_conv. Counter GFLOP/s: the convolution's multiply-adds x 2, as for conv2d.
#include <benchmark/benchmark.h>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/deform_conv.hpp"
#include "support/random.hpp"

namespace F = cvattn::functional;
using cvattn::Tensor;

namespace {

void run_deform(benchmark::State& state, bool with_mask, std::int64_t channels, std::int64_t size) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor x = cvattn::test::random_tensor({1, channels, size, size}, 1);
  const Tensor w = cvattn::test::random_tensor({channels, channels, 3, 3}, 2, -0.05f, 0.05f);
  const Tensor b = cvattn::test::random_tensor({channels}, 3);
  const Tensor off = cvattn::test::random_tensor({1, 18, size, size}, 4, -2.0f, 2.0f);
  const Tensor mask =
      with_mask ? cvattn::test::random_tensor({1, 9, size, size}, 5, 0.0f, 1.0f) : Tensor();
  const auto options = F::DeformConv2dOptions().padding(1);
  for (auto _ : state) {
    Tensor y = F::deform_conv2d(x, off, w, b, mask, options);
    benchmark::DoNotOptimize(y.data());
  }
  // The GEMM's multiply-adds (the sampling adds about 1/Cout of that again).
  const auto d = static_cast<double>(channels);
  const auto hw = static_cast<double>(size);
  cvattn::bench::set_flops(state, cvattn::bench::conv_flops(1, d, hw, hw, d, 3, 3));
}

void BM_DeformConv2dV2_64x56(benchmark::State& state) { run_deform(state, true, 64, 56); }
void BM_DeformConv2dV1_64x56(benchmark::State& state) { run_deform(state, false, 64, 56); }
void BM_DeformConv2dV2_256x14(benchmark::State& state) { run_deform(state, true, 256, 14); }

}  // namespace

BENCHMARK(BM_DeformConv2dV2_64x56)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_DeformConv2dV1_64x56)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_DeformConv2dV2_256x14)->Apply(cvattn::bench::one_and_all_threads);

// conv2d's depthwise and stem convs at the shapes of MobileNetV3-Small and EfficientNet-B0 on
// 224x224 inputs (batch 1, one thread): the Highway tap kernel over stride phases
// (src/functional/detail/depthwise_kernels.hpp). Args: channels, input size (square), kernel,
// stride; padding kernel / 2 as in timm. Counter GFLOP/s: multiply-adds x 2.
#include <benchmark/benchmark.h>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/conv.hpp"
#include "support/random.hpp"

namespace F = cvattn::functional;
using cvattn::Tensor;

namespace {

void run(benchmark::State& state, std::int64_t cin, std::int64_t cout, std::int64_t groups) {
  cvattn::set_num_threads(1);
  const std::int64_t size = state.range(1), k = state.range(2), stride = state.range(3);
  const Tensor x = cvattn::test::random_tensor({1, cin, size, size}, 1);
  const Tensor w = cvattn::test::random_tensor({cout, cin / groups, k, k}, 2);
  const Tensor b = cvattn::test::random_tensor({cout}, 3);
  const auto options = F::Conv2dOptions().stride(stride).padding(k / 2).groups(groups);
  cvattn::Shape out;
  for (auto _ : state) {
    Tensor y = F::conv2d(x, w, b, options);
    benchmark::DoNotOptimize(y.data());
    out = y.shape();
  }
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  cvattn::bench::set_flops(
      state, cvattn::bench::conv_flops(d(out[0]), d(out[1]), d(out[2]), d(out[3]), d(cin / groups),
                                       d(k), d(k)));
}

void BM_Depthwise(benchmark::State& state) {
  run(state, state.range(0), state.range(0), state.range(0));
}
// The 3-channel stem; range(0) is the output channels.
void BM_Stem(benchmark::State& state) { run(state, 3, state.range(0), 1); }

void depthwise_shapes(benchmark::internal::Benchmark* b) {
  // MobileNetV3-Small
  b->Args({16, 112, 3, 2})->Args({72, 56, 3, 2})->Args({88, 28, 3, 1})->Args({96, 28, 5, 2});
  b->Args({240, 14, 5, 1})->Args({288, 14, 5, 2})->Args({576, 7, 5, 1});
  // EfficientNet-B0
  b->Args({32, 112, 3, 1})->Args({96, 112, 3, 2})->Args({144, 56, 3, 1})->Args({144, 56, 5, 2});
  b->Args({240, 28, 5, 1})->Args({240, 28, 3, 2})->Args({480, 14, 3, 1})->Args({672, 14, 5, 1});
  b->Args({672, 14, 5, 2})->Args({1152, 7, 5, 1});
  b->Unit(benchmark::kMicrosecond);
}

}  // namespace

BENCHMARK(BM_Depthwise)->Apply(depthwise_shapes);
BENCHMARK(BM_Stem)->Args({16, 224, 3, 2})->Args({32, 224, 3, 2})->Unit(benchmark::kMicrosecond);

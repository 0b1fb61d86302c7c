// Pooling over a ResNet stage-1 batch, [8, 64, 56, 56]. Arg = threads (cvattn::set_num_threads).
// Counter GB/s: bytes of the input + bytes of the output per call (memory bound).
#include <benchmark/benchmark.h>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/pooling.hpp"
#include "support/random.hpp"

namespace F = cvattn::functional;
using cvattn::Tensor;

namespace {

const Tensor& input() {
  static const Tensor x = cvattn::test::random_tensor({8, 64, 56, 56}, 1);
  return x;
}

template <class Fn>
void run(benchmark::State& state, Fn fn) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor& x = input();
  double out_bytes = 0;
  for (auto _ : state) {
    Tensor y = fn(x);
    benchmark::DoNotOptimize(y.data());
    out_bytes = static_cast<double>(y.nbytes());
  }
  cvattn::bench::set_bytes(state, static_cast<double>(x.nbytes()) + out_bytes);
}

void BM_MaxPool3x3s2p1(benchmark::State& state) {
  run(state, [](const Tensor& x) {
    return F::max_pool2d(x, F::MaxPool2dOptions(3).stride(2).padding(1));
  });
}
void BM_MaxPool2x2(benchmark::State& state) {
  run(state, [](const Tensor& x) { return F::max_pool2d(x, F::MaxPool2dOptions(2)); });
}
void BM_AvgPool3x3s2p1(benchmark::State& state) {
  run(state, [](const Tensor& x) {
    return F::avg_pool2d(x, F::AvgPool2dOptions(3).stride(2).padding(1));
  });
}
void BM_AvgPool2x2(benchmark::State& state) {
  run(state, [](const Tensor& x) { return F::avg_pool2d(x, F::AvgPool2dOptions(2)); });
}
void BM_AdaptiveAvgPool1(benchmark::State& state) {
  run(state, [](const Tensor& x) { return F::adaptive_avg_pool2d(x, 1); });
}
void BM_AdaptiveAvgPool7(benchmark::State& state) {
  run(state, [](const Tensor& x) { return F::adaptive_avg_pool2d(x, 7); });
}
void BM_AdaptiveMaxPool1(benchmark::State& state) {
  run(state, [](const Tensor& x) { return F::adaptive_max_pool2d(x, 1); });
}
void BM_AdaptiveMaxPool7(benchmark::State& state) {
  run(state, [](const Tensor& x) { return F::adaptive_max_pool2d(x, 7); });
}

}  // namespace

BENCHMARK(BM_MaxPool3x3s2p1)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_MaxPool2x2)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_AvgPool3x3s2p1)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_AvgPool2x2)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_AdaptiveAvgPool1)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_AdaptiveAvgPool7)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_AdaptiveMaxPool1)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_AdaptiveMaxPool7)->Apply(cvattn::bench::one_and_all_threads);

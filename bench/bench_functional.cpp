// The small functional kernels at typical attention-module shapes. Arg = threads
// (cvattn::set_num_threads).
#include <benchmark/benchmark.h>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/linear.hpp"
#include "support/random.hpp"

namespace F = cvattn::functional;
using cvattn::Tensor;

namespace {

template <class Fn>
void run(benchmark::State& state, Fn fn) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Tensor y = fn();
    benchmark::DoNotOptimize(y.data());
  }
}

const Tensor& feature_map() {  // [8, 64, 56, 56]
  static const Tensor x = cvattn::test::random_tensor({8, 64, 56, 56}, 1, -4.0f, 4.0f);
  return x;
}

void BM_Relu(benchmark::State& state) {
  run(state, [] { return F::relu(feature_map()); });
}
void BM_Sigmoid(benchmark::State& state) {
  run(state, [] { return F::sigmoid(feature_map()); });
}
void BM_Tanh(benchmark::State& state) {
  run(state, [] { return F::tanh(feature_map()); });
}
void BM_BatchNorm(benchmark::State& state) {
  static const Tensor mean = cvattn::test::random_tensor({64}, 2);
  static const Tensor var = cvattn::test::random_tensor({64}, 3, 0.5f, 2.0f);
  static const Tensor w = cvattn::test::random_tensor({64}, 4);
  static const Tensor b = cvattn::test::random_tensor({64}, 5);
  run(state, [] { return F::batch_norm(feature_map(), mean, var, w, b); });
}
// Attention scores: [8 heads, 196 queries, 196 keys], softmax over keys.
void BM_SoftmaxLastDim(benchmark::State& state) {
  static const Tensor x = cvattn::test::random_tensor({8, 196, 196}, 6, -5.0f, 5.0f);
  run(state, [] { return F::softmax(x, -1); });
}
// Channel softmax of a [8, 64, 56, 56] map (strided reduction).
void BM_SoftmaxChannels(benchmark::State& state) {
  run(state, [] { return F::softmax(feature_map(), 1); });
}
// Token projection: [8*196, 256] x [256 -> 768].
void BM_Linear(benchmark::State& state) {
  static const Tensor x = cvattn::test::random_tensor({8, 196, 256}, 7);
  static const Tensor w = cvattn::test::random_tensor({768, 256}, 8);
  static const Tensor b = cvattn::test::random_tensor({768}, 9);
  run(state, [] { return F::linear(x, w, b); });
}

}  // namespace

BENCHMARK(BM_Relu)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Sigmoid)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Tanh)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_BatchNorm)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_SoftmaxLastDim)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_SoftmaxChannels)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Linear)->Apply(cvattn::bench::one_and_all_threads);

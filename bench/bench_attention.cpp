// Benchmarks for the attention family (functional part).
#include <benchmark/benchmark.h>

#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/attention.hpp"
#include "support/random.hpp"

namespace F = cvattn::functional;
using cvattn::Tensor;

namespace {

void BM_Sdpa(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const bool weights = state.range(1) != 0;
  const Tensor q = cvattn::test::random_tensor({8, 8, 196, 32}, 1);
  const Tensor k = cvattn::test::random_tensor({8, 8, 196, 32}, 2);
  const Tensor v = cvattn::test::random_tensor({8, 8, 196, 32}, 3);
  const auto opts = F::SdpaOptions().need_weights(weights);
  for (auto _ : state) {
    auto r = F::scaled_dot_product_attention(q, k, v, {}, opts);
    benchmark::DoNotOptimize(r.output.data());
  }
}
BENCHMARK(BM_Sdpa)->ArgNames({"threads", "weights"})->Args({1, 1})->Args({1, 0})->Args({2, 1})->Args({2, 0})->Unit(benchmark::kMillisecond);

}  // namespace

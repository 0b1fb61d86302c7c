// SelectiveKernel (timm SKNet block) on [1, 64, 56, 56]: two paths, 64 channels, defaults
// (3x3 dilation 1 and 3x3 dilation 2 over 32 input channels each, attention width 8).
// Arg = threads (cvattn::set_num_threads). The two path convolutions alone are benchmarked too,
// since they are nearly all of the work (2 x 115.6 MFLOP). PyTorch reference: bench/bench_sk.py.
#include <benchmark/benchmark.h>

#include <string>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/modules/selective_kernel.hpp"
#include "support/random.hpp"

using cvattn::Shape;
using cvattn::StateDict;
using cvattn::Tensor;

namespace {

namespace F = cvattn::functional;

const Shape kShape = {1, 64, 56, 56};
// Multiply-adds of both paths, counted as 2 FLOP each: 2 * (64 * 32 * 9 * 56 * 56) * 2.
constexpr double kFlops = 2.0 * 2.0 * 64 * 32 * 9 * 56 * 56;

cvattn::SelectiveKernel make_sk(const cvattn::SelectiveKernelOptions& options) {
  cvattn::SelectiveKernel sk{options};
  const StateDict current = sk.state_dict();
  StateDict filled;
  std::uint64_t seed = 100;
  for (const auto& e : current.entries()) {
    if (e.integer) continue;
    Tensor t = cvattn::test::random_tensor(e.value.shape(), seed++, -0.2f, 0.2f);
    if (e.key.find("running_var") != std::string::npos) t.fill(1.0f);
    filled.set(e.key, t);
  }
  sk.load_state_dict(filled);
  return sk;
}

void BM_SelectiveKernel(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const cvattn::SelectiveKernel sk = make_sk(cvattn::SelectiveKernelOptions(kShape[1]));
  const Tensor x = cvattn::test::random_tensor(kShape, 1, -2.0f, 2.0f);
  for (auto _ : state) {
    Tensor y = sk.forward(x);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  cvattn::bench::set_flops(state, kFlops);
}
BENCHMARK(BM_SelectiveKernel)->Apply(cvattn::bench::one_and_all_threads);

// A one-path block over [1, 32, 56, 56] -> 64 channels: kernel_size {3} is the first path of
// the default block, {5} (3x3 dilation 2 under keep_3x3) the second one, run as a polyphase
// conv; the tail (pooling, attention, select) costs the same in both.
void BM_SelectiveKernelOnePath(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const cvattn::SelectiveKernel sk =
      make_sk(cvattn::SelectiveKernelOptions(32).out_channels(64).kernel_size({state.range(1)}));
  const Tensor x = cvattn::test::random_tensor({1, 32, 56, 56}, 1, -2.0f, 2.0f);
  for (auto _ : state) {
    Tensor y = sk.forward(x);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  cvattn::bench::set_flops(state, kFlops / 2);
}
BENCHMARK(BM_SelectiveKernelOnePath)
    ->ArgNames({"threads", "kernel"})
    ->Args({1, 3})
    ->Args({1, 5})
    ->Args({cvattn::bench::all_threads(), 3})
    ->Args({cvattn::bench::all_threads(), 5})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// One path's conv through conv2d as it is (dilation 2: im2col + GEMM): [1, 32, 56, 56] -> [1, 64,
// 56, 56], 3x3, padding = dilation = Arg(1).
void BM_SkPathConv(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const std::int64_t d = state.range(1);
  const Tensor x = cvattn::test::random_tensor({1, 32, 56, 56}, 2, -2.0f, 2.0f);
  const Tensor w = cvattn::test::random_tensor({64, 32, 3, 3}, 3, -0.1f, 0.1f);
  const Tensor b = cvattn::test::random_tensor({64}, 4);
  const auto options = F::Conv2dOptions().padding(d).dilation(d);
  for (auto _ : state) {
    Tensor y = F::conv2d(x, w, b, options);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  cvattn::bench::set_flops(state, kFlops / 2);
}
BENCHMARK(BM_SkPathConv)
    ->ArgNames({"threads", "dilation"})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Args({cvattn::bench::all_threads(), 1})
    ->Args({cvattn::bench::all_threads(), 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

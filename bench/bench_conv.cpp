// conv2d at the shapes of a ResNet stage: 3x3 64->64, 1x1 64->64 and depthwise 3x3 over
// [1, 64, 56, 56], and of its last stage (7x7 planes). Arg = threads (cvattn::set_num_threads).
// Counter GFLOP/s: the direct convolution's multiply-adds x 2 (Winograd does fewer, so it can
// exceed the SGEMM limit). The *Act rows: hard-swish after a MobileNetV3-sized 1x1 expansion and
// depthwise conv, fused into the conv (conv2d with act) and as a second pass (conv2d, then
// activation_).
#include <benchmark/benchmark.h>

#include <cmath>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/conv.hpp"
#include "support/random.hpp"

namespace F = cvattn::functional;
using cvattn::Tensor;

namespace {

// `prepared`: through a Conv2dWeight, as a network's layers run (the weight packed once).
void run_conv(benchmark::State& state, const cvattn::Shape& in_shape, const cvattn::Shape& w_shape,
              const F::Conv2dOptions& options, bool prepared = false) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor x = cvattn::test::random_tensor(in_shape, 1);
  // Weights at PyTorch's default scale, uniform within 1 / sqrt(fan_in), as trained ones are
  // (unit-range weights would push 3x3 convs off Winograd F(4x4, 3x3): docs/functional.md).
  const float bound = 1.0f / std::sqrt(static_cast<float>(w_shape[1] * w_shape[2] * w_shape[3]));
  const Tensor w = cvattn::test::random_tensor(w_shape, 2, -bound, bound);
  const Tensor b = cvattn::test::random_tensor({w_shape[0]}, 3);
  const F::Conv2dWeight pw(w, options);
  cvattn::Shape out;
  for (auto _ : state) {
    Tensor y = prepared ? F::conv2d(x, pw, b) : F::conv2d(x, w, b, options);
    benchmark::DoNotOptimize(y.data());
    out = y.shape();
  }
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  cvattn::bench::set_flops(
      state, cvattn::bench::conv_flops(d(out[0]), d(out[1]), d(out[2]), d(out[3]), d(w_shape[1]),
                                       d(w_shape[2]), d(w_shape[3])));
}

void BM_Conv3x3_64(benchmark::State& state) {
  run_conv(state, {1, 64, 56, 56}, {64, 64, 3, 3}, F::Conv2dOptions().padding(1));
}
// The same through a Conv2dWeight (Winograd weights transformed and packed once), as a
// network's layer and compare_torch.py's conv2d row run it.
void BM_Conv3x3_64_Prepared(benchmark::State& state) {
  run_conv(state, {1, 64, 56, 56}, {64, 64, 3, 3}, F::Conv2dOptions().padding(1), true);
}
void BM_Conv1x1_64(benchmark::State& state) {
  run_conv(state, {1, 64, 56, 56}, {64, 64, 1, 1}, F::Conv2dOptions());
}
void BM_ConvDepthwise3x3_64(benchmark::State& state) {
  run_conv(state, {1, 64, 56, 56}, {64, 1, 3, 3}, F::Conv2dOptions().padding(1).groups(64));
}
void BM_Conv3x3_64_Stride2(benchmark::State& state) {
  run_conv(state, {1, 64, 56, 56}, {128, 64, 3, 3}, F::Conv2dOptions().padding(1).stride(2));
}
void BM_Conv7x7_Stem(benchmark::State& state) {
  run_conv(state, {1, 3, 224, 224}, {64, 3, 7, 7}, F::Conv2dOptions().padding(3).stride(2));
}
// The last stage of a ResNet: [Cout, 49] products on a 7x7 plane, weights prepared.
void BM_Conv3x3_512_Plane7(benchmark::State& state) {
  run_conv(state, {1, 512, 7, 7}, {512, 512, 3, 3}, F::Conv2dOptions().padding(1), true);
}
void BM_Conv1x1_512to2048_Plane7(benchmark::State& state) {
  run_conv(state, {1, 512, 7, 7}, {2048, 512, 1, 1}, F::Conv2dOptions(), true);
}

// Arg 0: threads; arg 1: 1 = fused activation, 0 = a second pass.
void run_conv_act(benchmark::State& state, const cvattn::Shape& in_shape,
                  const cvattn::Shape& w_shape, const F::Conv2dOptions& options) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const bool fused = state.range(1) != 0;
  const Tensor x = cvattn::test::random_tensor(in_shape, 1);
  const F::Conv2dWeight w(cvattn::test::random_tensor(w_shape, 2), options);
  const Tensor b = cvattn::test::random_tensor({w_shape[0]}, 3);
  for (auto _ : state) {
    Tensor y = fused ? F::conv2d(x, w, b, cvattn::ActLayer::hard_swish) : F::conv2d(x, w, b);
    if (!fused) F::activation_(y, cvattn::ActLayer::hard_swish);
    benchmark::DoNotOptimize(y.data());
  }
}

void BM_Conv1x1ExpandAct(benchmark::State& state) {
  run_conv_act(state, {8, 24, 28, 28}, {96, 24, 1, 1}, F::Conv2dOptions());
}
// EfficientNet-B0's second-stage expansion at batch 8: the 38 MB output exceeds the last-level
// cache, so whether bias, GEMM and activation meet it in L2 decides the time.
void BM_Conv1x1ExpandLarge(benchmark::State& state) {
  run_conv_act(state, {8, 16, 112, 112}, {96, 16, 1, 1}, F::Conv2dOptions());
}
void BM_ConvDepthwise5x5Act(benchmark::State& state) {
  run_conv_act(state, {8, 96, 28, 28}, {96, 1, 5, 5}, F::Conv2dOptions().padding(2).groups(96));
}

}  // namespace

BENCHMARK(BM_Conv3x3_64)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Conv3x3_64_Prepared)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Conv1x1_64)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_ConvDepthwise3x3_64)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Conv3x3_64_Stride2)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Conv7x7_Stem)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Conv3x3_512_Plane7)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Conv1x1_512to2048_Plane7)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Conv1x1ExpandAct)->ArgsProduct({{1}, {1, 0}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv1x1ExpandLarge)->ArgsProduct({{1}, {1}})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ConvDepthwise5x5Act)->ArgsProduct({{1}, {1, 0}})->Unit(benchmark::kMillisecond);

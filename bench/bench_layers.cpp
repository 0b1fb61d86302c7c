// The layers of issue 18 on the shapes a ViT-S / ResNet stage gives them: layer_norm over 384
// of [8,197,384], group_norm [8,64,56,56] in 32 groups, gelu (erf and tanh) [8,197,1536],
// silu / hardswish / hardsigmoid / mish [8,197,1536], bilinear / bicubic / nearest interpolate
// [8,64,56,56] -> 112x112 and bilinear / bicubic [8,64,112,112] -> 72x72, broadcasting add of a
// per-channel [1,64,1,1] and of a [384] bias, permute NCHW -> NHWC, mean over H, W. Arg = threads
// (cvattn::set_num_threads). Counter "GB/s" = bytes read once + written once.
#include <benchmark/benchmark.h>

#include <initializer_list>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/interpolate.hpp"
#include "cvattn/functional/normalization.hpp"
#include "cvattn/functional/tensor_ops.hpp"
#include "support/random.hpp"

namespace F = cvattn::functional;
using cvattn::Tensor;

namespace {

template <class Fn>
void run(benchmark::State& state, const Tensor& x, Fn&& fn, double bytes) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    Tensor y = fn(x);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  cvattn::bench::set_bytes(state, bytes);
}

void BM_LayerNorm(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 197, 384}, 1, -2.0f, 2.0f);
  const Tensor w = cvattn::test::random_tensor({384}, 2), b = cvattn::test::random_tensor({384}, 3);
  run(
      state, x, [&](const Tensor& t) { return F::layer_norm(t, {384}, w, b); },
      2.0 * static_cast<double>(x.nbytes()));
}

void BM_GroupNorm(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 64, 56, 56}, 1, -2.0f, 2.0f);
  const Tensor w = cvattn::test::random_tensor({64}, 2), b = cvattn::test::random_tensor({64}, 3);
  run(
      state, x, [&](const Tensor& t) { return F::group_norm(t, 32, w, b); },
      2.0 * static_cast<double>(x.nbytes()));
}

void BM_LayerNorm2d(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 64, 56, 56}, 1, -2.0f, 2.0f);
  const Tensor w = cvattn::test::random_tensor({64}, 2), b = cvattn::test::random_tensor({64}, 3);
  run(
      state, x, [&](const Tensor& t) { return F::layer_norm2d(t, w, b, 1e-6); },
      2.0 * static_cast<double>(x.nbytes()));
}

void BM_Gelu(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 197, 1536}, 1, -4.0f, 4.0f);
  const auto approximate =
      state.range(1) != 0 ? cvattn::GeluApproximate::tanh : cvattn::GeluApproximate::none;
  run(
      state, x, [&](const Tensor& t) { return F::gelu(t, approximate); },
      2.0 * static_cast<double>(x.nbytes()));
}

// Arg: a cvattn::ActLayer (silu, hard_swish, hard_sigmoid, mish).
void BM_Activation(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 197, 1536}, 1, -4.0f, 4.0f);
  const auto act = static_cast<cvattn::ActLayer>(state.range(1));
  run(
      state, x, [&](const Tensor& t) { return F::activation(t, act); },
      2.0 * static_cast<double>(x.nbytes()));
}

// Square planes of `in` pixels of 8x64 to `out`, in the mode of the second argument.
void interpolate_planes(benchmark::State& state, std::int64_t in, std::int64_t out) {
  const Tensor x = cvattn::test::random_tensor({8, 64, in, in}, 1);
  const auto options =
      F::InterpolateOptions().size({out, out}).mode(static_cast<F::Interpolation>(state.range(1)));
  const double ratio = static_cast<double>(out * out) / static_cast<double>(in * in);
  run(
      state, x, [&](const Tensor& t) { return F::interpolate(t, options); },
      (1.0 + ratio) * static_cast<double>(x.nbytes()));
}

void BM_Interpolate(benchmark::State& state) { interpolate_planes(state, 56, 112); }

// Downsampling: the taps of a vector of outputs span more than one vector of input and less than
// two (interp_kernels' two-window path on AVX2 and AVX-512).
void BM_InterpolateDown(benchmark::State& state) { interpolate_planes(state, 112, 72); }

void BM_AddChannelBias(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 64, 56, 56}, 1);
  const Tensor b = cvattn::test::random_tensor({1, 64, 1, 1}, 2);
  run(
      state, x, [&](const Tensor& t) { return F::add(t, b); },
      2.0 * static_cast<double>(x.nbytes()));
}

void BM_AddTokenBias(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 197, 384}, 1);
  const Tensor b = cvattn::test::random_tensor({384}, 2);
  run(
      state, x, [&](const Tensor& t) { return F::add(t, b); },
      2.0 * static_cast<double>(x.nbytes()));
}

void BM_AddSameShape(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 197, 384}, 1);
  const Tensor r = cvattn::test::random_tensor({8, 197, 384}, 2);
  run(
      state, x, [&](const Tensor& t) { return F::add(t, r); },
      3.0 * static_cast<double>(x.nbytes()));
}

void BM_PermuteNchwToNhwc(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 64, 56, 56}, 1);
  run(
      state, x,
      [](const Tensor& t) {
        return F::permute(t, {0, 2, 3, 1});
      },
      2.0 * static_cast<double>(x.nbytes()));
}

void BM_MeanHw(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 64, 56, 56}, 1);
  run(
      state, x,
      [](const Tensor& t) {
        return F::mean(t, {2, 3});
      },
      static_cast<double>(x.nbytes()));
}

void BM_MeanTokens(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor({8, 197, 384}, 1);
  run(
      state, x, [](const Tensor& t) { return F::mean(t, {1}); }, static_cast<double>(x.nbytes()));
}

void threads_only(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
}

void threads_and(benchmark::internal::Benchmark* b, std::initializer_list<std::int64_t> args) {
  for (const std::int64_t t : {std::int64_t{1}, std::int64_t{2}}) {
    for (const auto a : args) b->Args({t, a});
  }
  b->ArgNames({"threads", "arg"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

}  // namespace

BENCHMARK(BM_LayerNorm)->Apply(threads_only);
BENCHMARK(BM_GroupNorm)->Apply(threads_only);
BENCHMARK(BM_LayerNorm2d)->Apply(threads_only);
BENCHMARK(BM_Gelu)->Apply([](auto* b) { threads_and(b, {0, 1}); });
BENCHMARK(BM_Activation)->Apply([](auto* b) {
  threads_and(b, {static_cast<std::int64_t>(cvattn::ActLayer::silu),
                  static_cast<std::int64_t>(cvattn::ActLayer::hard_swish),
                  static_cast<std::int64_t>(cvattn::ActLayer::hard_sigmoid),
                  static_cast<std::int64_t>(cvattn::ActLayer::mish)});
});
BENCHMARK(BM_Interpolate)->Apply([](auto* b) {
  threads_and(b, {static_cast<std::int64_t>(F::Interpolation::bilinear),
                  static_cast<std::int64_t>(F::Interpolation::bicubic),
                  static_cast<std::int64_t>(F::Interpolation::nearest)});
});
BENCHMARK(BM_InterpolateDown)->Apply([](auto* b) {
  threads_and(b, {static_cast<std::int64_t>(F::Interpolation::bilinear),
                  static_cast<std::int64_t>(F::Interpolation::bicubic),
                  static_cast<std::int64_t>(F::Interpolation::nearest)});
});
BENCHMARK(BM_AddChannelBias)->Apply(threads_only);
BENCHMARK(BM_AddTokenBias)->Apply(threads_only);
BENCHMARK(BM_AddSameShape)->Apply(threads_only);
BENCHMARK(BM_PermuteNchwToNhwc)->Apply(threads_only);
BENCHMARK(BM_MeanHw)->Apply(threads_only);
BENCHMARK(BM_MeanTokens)->Apply(threads_only);

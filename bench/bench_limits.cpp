// The machine's limits, measured by the suite itself so that every op's figure can be read as a
// fraction of the relevant one (docs/performance.md):
// - copy bandwidth: memcpy and a non-temporal (streaming) copy of a 64 MiB buffer, far larger
//   than any cache, counted as bytes read + bytes written (the same definition as the op
//   benches' "GB/s" counter); Arg = threads, each copying its own share.
// - single-core SGEMM: Eigen's float matrix product, C += A * B, on square matrices; Arg = n.
//   Eigen is the GEMM every cvattn kernel calls, so this is the FLOP/s ceiling of conv2d, SK and
//   deform_conv2d on one core.
// - single-core FMA peak: independent fused multiply-adds on registers only (no memory), the
//   arithmetic ceiling no kernel can pass; GEMM-bound ops are judged against it in
//   docs/performance.md (e.g. why mha cannot reach 2x PyTorch on a core where PyTorch's own
//   projection GEMMs already run near it).
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <Eigen/Core>
#include <cstring>
#include <vector>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"

namespace {

constexpr std::size_t kCopyBytes = std::size_t{64} << 20;

struct Buffers {
  std::vector<float> src, dst;
  Buffers() : src(kCopyBytes / sizeof(float), 1.0f), dst(kCopyBytes / sizeof(float), 0.0f) {}
};

Buffers& buffers() {
  static Buffers b;
  return b;
}

// dst[0, n) = src[0, n) with 32-byte streaming stores that bypass the caches (n a multiple of 8,
// both 32-byte aligned after the scalar head).
void stream_copy(const float* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i < n && (reinterpret_cast<std::uintptr_t>(dst + i) & 31) != 0; ++i) dst[i] = src[i];
#if defined(__AVX__)
  for (; i + 8 <= n; i += 8) _mm256_stream_ps(dst + i, _mm256_loadu_ps(src + i));
  _mm_sfence();
#endif
  for (; i < n; ++i) dst[i] = src[i];
}

template <class Copy>
void run_copy(benchmark::State& state, Copy copy) {
  const int threads = static_cast<int>(state.range(0));
  cvattn::set_num_threads(threads);
  Buffers& b = buffers();
  const std::size_t n = b.src.size();
  for (auto _ : state) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const std::size_t lo = n * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads);
      const std::size_t hi =
          n * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads);
      copy(b.src.data() + lo, b.dst.data() + lo, hi - lo);
    }
    benchmark::DoNotOptimize(b.dst.data());
    benchmark::ClobberMemory();
  }
  cvattn::bench::set_bytes(state, 2.0 * static_cast<double>(kCopyBytes));
}

void BM_CopyMemcpy(benchmark::State& state) {
  run_copy(state,
           [](const float* s, float* d, std::size_t n) { std::memcpy(d, s, n * sizeof(float)); });
}

void BM_CopyStreaming(benchmark::State& state) { run_copy(state, stream_copy); }

void BM_SgemmEigen(benchmark::State& state) {
  Eigen::setNbThreads(1);
  const auto n = static_cast<Eigen::Index>(state.range(0));
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf b = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf c = Eigen::MatrixXf::Zero(n, n);
  for (auto _ : state) {
    c.noalias() += a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  const double nd = static_cast<double>(n);
  cvattn::bench::set_flops(state, 2.0 * nd * nd * nd);
}

// 12 independent accumulators: enough to cover the FMA latency (4-5 cycles) on two pipes.
void BM_FmaPeak(benchmark::State& state) {
  constexpr int kAcc = 12;
  constexpr long kSteps = 1 << 20;
#if defined(__AVX__) && defined(__FMA__)
  using V = __m256;
  constexpr int kLanes = 8;
  const auto fma = [](V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); };
  const V mul = _mm256_set1_ps(0.999999f), add = _mm256_set1_ps(1e-6f);
  V acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
#else
  using V = float;
  constexpr int kLanes = 1;
  const auto fma = [](V a, V b, V c) { return a * b + c; };
  const V mul = 0.999999f, add = 1e-6f;
  V acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = static_cast<float>(i);
#endif
  for (auto _ : state) {
    for (long s = 0; s < kSteps; ++s) {
      for (auto& a : acc) a = fma(a, mul, add);
    }
    for (auto& a : acc) benchmark::DoNotOptimize(a);
  }
  cvattn::bench::set_flops(state, 2.0 * kLanes * kAcc * static_cast<double>(kSteps));
}

}  // namespace

BENCHMARK(BM_FmaPeak)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CopyMemcpy)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(cvattn::bench::all_threads())
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CopyStreaming)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(cvattn::bench::all_threads())
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SgemmEigen)
    ->ArgName("n")
    ->Arg(256)
    ->Arg(512)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The machine's limits, measured by the suite itself so that every op's figure can be read as a
// fraction of the relevant one (docs/performance.md):
// - copy bandwidth: memcpy and a non-temporal (streaming) copy of a 64 MiB buffer, far larger
//   than any cache, counted as bytes read + bytes written (the same definition as the op
//   benches' "GB/s" counter); Arg = threads, each copying its own share.
// - single-core SGEMM: Eigen's float matrix product, C += A * B, on square matrices, at the ISA
//   this program is compiled for (SSE2 in a portable build); and the library's own product
//   (F::linear, OpenBLAS when built with it, which picks its kernels for the CPU at run time):
//   the FLOP/s ceiling of conv2d, SK and deform_conv2d on one core. Arg = n.
// - single-core FMA peak: independent fused multiply-adds on registers only (no memory), the
//   arithmetic ceiling no kernel can pass, once per vector width the CPU runs (chosen at run
//   time, so a portable build measures it too); GEMM-bound ops are judged against it in
//   docs/performance.md (e.g. why mha cannot reach 2x PyTorch on a core where PyTorch's own
//   projection GEMMs already run near it).
#include <benchmark/benchmark.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <Eigen/Core>
#include <cstring>
#include <vector>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/linear.hpp"

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

void BM_SgemmLibrary(benchmark::State& state) {
  cvattn::set_num_threads(1);
  const std::int64_t n = state.range(0);
  cvattn::Tensor a = cvattn::Tensor::empty({n, n}), b = cvattn::Tensor::empty({n, n});
  for (std::int64_t i = 0; i < n * n; ++i) {
    a.data()[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
    b.data()[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  }
  for (auto _ : state) {
    cvattn::Tensor c = cvattn::functional::linear(a, b);  // a * b^T
    benchmark::DoNotOptimize(c.data());
  }
  const double nd = static_cast<double>(n);
  cvattn::bench::set_flops(state, 2.0 * nd * nd * nd);
}

// The products the ops make, through linear (x [M,K] times w [N,K] transposed): conv2d 3x3 64->64
// on 56x56 as im2col, MHA [8,196,256]'s input and output projections, a ViT-S MLP, a 3x3 conv
// 256->256 on 28x28. Run with CVATTN_GEMM=packed or =openblas to compare the two products
// (docs/performance.md#matrix-products).
void BM_SgemmShape(benchmark::State& state) {
  cvattn::set_num_threads(1);
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  cvattn::Tensor x = cvattn::Tensor::empty({m, k}), w = cvattn::Tensor::empty({n, k});
  for (std::int64_t i = 0; i < m * k; ++i) x.data()[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  for (std::int64_t i = 0; i < n * k; ++i) w.data()[i] = static_cast<float>(i % 5) * 0.25f - 0.5f;
  for (auto _ : state) {
    cvattn::Tensor c = cvattn::functional::linear(x, w);
    benchmark::DoNotOptimize(c.data());
  }
  cvattn::bench::set_flops(
      state, 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k));
}

// 12 independent accumulators: enough to cover the FMA latency (4-5 cycles) on two pipes. Each
// width has its own function so that the compiler emits that width's instructions only there;
// they return a sum of the accumulators so that nothing is optimised away.
constexpr int kAcc = 12;

#define CVATTN_FMA_CHAINS(V, SET, FMA, LANES)                         \
  const V mul = SET(0.999999f), add = SET(1e-6f);                     \
  V acc[kAcc];                                                        \
  for (int i = 0; i < kAcc; ++i) acc[i] = SET(static_cast<float>(i)); \
  for (long s = 0; s < steps; ++s) {                                  \
    for (auto& a : acc) a = FMA(a, mul, add);                         \
  }                                                                   \
  float sum = 0.0f;                                                   \
  for (auto& a : acc) {                                               \
    float lanes[LANES];                                               \
    std::memcpy(lanes, &a, sizeof(lanes));                            \
    for (float l : lanes) sum += l;                                   \
  }                                                                   \
  return sum;

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) float fma_peak_avx2(long steps) {
  CVATTN_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, 8)
}

__attribute__((target("avx512f"))) float fma_peak_avx512(long steps) {
  CVATTN_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, 16)
}
#endif

inline float scalar_set(float v) { return v; }
inline float scalar_fma(float a, float b, float c) { return a * b + c; }
float fma_peak_scalar(long steps) { CVATTN_FMA_CHAINS(float, scalar_set, scalar_fma, 1) }
#undef CVATTN_FMA_CHAINS

template <int kLanes>
void BM_FmaPeak(benchmark::State& state, float (*chains)(long)) {
  constexpr long kSteps = 1 << 20;
  for (auto _ : state) benchmark::DoNotOptimize(chains(kSteps));
  cvattn::bench::set_flops(state, 2.0 * kLanes * kAcc * static_cast<double>(kSteps));
}

// One BM_FmaPeak row per vector width this CPU runs: /avx512 (16 lanes), /avx2 (8), /scalar.
const bool fma_rows = [] {
  const auto add = [](const char* name, void (*fn)(benchmark::State&, float (*)(long)),
                      float (*chains)(long)) {
    benchmark::RegisterBenchmark(name, fn, chains)->UseRealTime()->Unit(benchmark::kMillisecond);
  };
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) add("BM_FmaPeak/avx512", BM_FmaPeak<16>, fma_peak_avx512);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    add("BM_FmaPeak/avx2", BM_FmaPeak<8>, fma_peak_avx2);
  }
#endif
  add("BM_FmaPeak/scalar", BM_FmaPeak<1>, fma_peak_scalar);
  return true;
}();

// Arg = threads for the copies, n for the products.
void thread_args(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(cvattn::bench::all_threads());
}
void size_args(benchmark::internal::Benchmark* b) {
  b->ArgName("n")->Arg(256)->Arg(512)->Arg(1024);
}

}  // namespace

BENCHMARK(BM_CopyMemcpy)->Apply(thread_args)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CopyStreaming)->Apply(thread_args)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SgemmEigen)->Apply(size_args)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SgemmLibrary)->Apply(size_args)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SgemmShape)
    ->ArgNames({"m", "n", "k"})
    ->Args({3136, 64, 576})
    ->Args({1568, 768, 256})
    ->Args({1568, 256, 256})
    ->Args({1568, 1536, 384})
    ->Args({784, 256, 2304})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#pragma once
// Throughput counters shared by the benches, so that every op's figure can be read against the
// machine limits bench_limits measures (copy bandwidth, single-core SGEMM GFLOP/s).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <thread>

namespace cvattn::bench {

// "GFLOP/s": `flops` floating-point operations per iteration (a multiply-add counts 2).
inline void set_flops(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// "GB/s": `bytes` moved per iteration, counted as the tensors read once plus the tensors written
// once (what a copy of the same data moves), and bytes_per_second for Google Benchmark's own
// column.
inline void set_bytes(benchmark::State& state, double bytes) {
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) * state.iterations());
}

// Multiply-adds of a dense convolution, as FLOPs: 2 * N * Cout * Ho * Wo * Cin/groups * kh * kw.
inline double conv_flops(double n, double cout, double ho, double wo, double cin_g, double kh,
                         double kw) {
  return 2.0 * n * cout * ho * wo * cin_g * kh * kw;
}

// Every hardware thread: the "all threads" variant of the benches.
inline int all_threads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// Arg(1) and Arg(all_threads()) for benches whose argument is the thread count, timed on the
// wall clock (with several threads the CPU column holds only the main thread's time), in ms.
inline void one_and_all_threads(benchmark::internal::Benchmark* b) {
  b->Arg(1);
  if (all_threads() > 1) b->Arg(all_threads());
  b->UseRealTime()->Unit(benchmark::kMillisecond);
}

}  // namespace cvattn::bench

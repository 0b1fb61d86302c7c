// Channel attention (SqueezeExcitation, Eca, Cbam) on [8, 256, 28, 28], plus the machine's copy
// bandwidth as the reference: these modules are memory bound, and the floor is one read of x and
// one write of y (what a copy moves). Arg = threads (cvattn::set_num_threads).
//
// Counter "GB/s" = (bytes of x + bytes of y) / time, the same definition for the copy, so the
// modules' figure reads directly as a fraction of the copy bandwidth.
//
// The plain entries reuse one input, which (6.4 MB) can stay in a large last-level cache between
// iterations because y is written with streaming stores; the */cold entries first overwrite a
// 32 MB buffer (outside the timing) so that x comes from DRAM, as after a long unrelated layer.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/modules/cbam.hpp"
#include "cvattn/modules/eca.hpp"
#include "cvattn/modules/squeeze_excitation.hpp"
#include "support/random.hpp"

using cvattn::Shape;
using cvattn::StateDict;
using cvattn::Tensor;

namespace {

const Shape kShape = {8, 256, 28, 28};

// Weights in the range trained SE/CBAM blocks have, so the gates are not saturated.
template <class M>
void randomize(M& module) {
  const StateDict current = module.state_dict();
  StateDict filled;
  std::uint64_t seed = 100;
  for (const auto& e : current.entries()) {
    if (e.integer) continue;
    Tensor t = cvattn::test::random_tensor(e.value.shape(), seed++, -0.1f, 0.1f);
    if (e.key.find("running_var") != std::string::npos) t.fill(1.0f);
    filled.set(e.key, t);
  }
  module.load_state_dict(filled);
}

// Evicts everything from the caches (outside the timed region).
void flush_caches(benchmark::State& state, std::vector<float>& junk) {
  state.PauseTiming();
  for (std::size_t i = 0; i < junk.size(); i += 16) junk[i] += 1.0f;
  benchmark::DoNotOptimize(junk.data());
  benchmark::ClobberMemory();
  state.ResumeTiming();
}

std::vector<float> cache_flusher(bool cold) {
  return std::vector<float>(cold ? (std::size_t{32} << 20) / sizeof(float) : 0);
}

template <class M>
void run_module(benchmark::State& state, const M& module, bool cold = false) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor x = cvattn::test::random_tensor(kShape, 1, -2.0f, 2.0f);
  std::vector<float> junk = cache_flusher(cold);
  for (auto _ : state) {
    if (cold) flush_caches(state, junk);
    Tensor y = module.forward(x);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  cvattn::bench::set_bytes(state, 2.0 * static_cast<double>(x.nbytes()));
}

void BM_SqueezeExcitation(benchmark::State& state) {
  cvattn::SqueezeExcitation se{cvattn::SqueezeExcitationOptions(kShape[1])};
  randomize(se);
  run_module(state, se);
}

void BM_Eca(benchmark::State& state) {
  cvattn::Eca eca{cvattn::EcaOptions(kShape[1])};
  randomize(eca);
  run_module(state, eca);
}

void BM_Cbam(benchmark::State& state) {
  cvattn::Cbam cbam{cvattn::CbamOptions(kShape[1])};
  randomize(cbam);
  run_module(state, cbam);
}

void BM_SqueezeExcitationCold(benchmark::State& state) {
  cvattn::SqueezeExcitation se{cvattn::SqueezeExcitationOptions(kShape[1])};
  randomize(se);
  run_module(state, se, true);
}

void BM_CbamCold(benchmark::State& state) {
  cvattn::Cbam cbam{cvattn::CbamOptions(kShape[1])};
  randomize(cbam);
  run_module(state, cbam, true);
}

// memcpy of the same 6.4 MB into a preallocated buffer (one thread): the bandwidth reference.
// Arg 1: caches flushed before each copy.
void BM_MemcpyReference(benchmark::State& state) {
  const bool cold = state.range(0) != 0;
  const Tensor x = cvattn::test::random_tensor(kShape, 1);
  std::vector<float> dst(static_cast<std::size_t>(x.numel()));
  std::vector<float> junk = cache_flusher(cold);
  for (auto _ : state) {
    if (cold) flush_caches(state, junk);
    std::memcpy(dst.data(), x.data(), static_cast<std::size_t>(x.nbytes()));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  cvattn::bench::set_bytes(state, 2.0 * static_cast<double>(x.nbytes()));
}

// Tensor::clone(): a copy into a freshly allocated tensor, as every forward() returns one.
void BM_CloneReference(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor(kShape, 1);
  for (auto _ : state) {
    Tensor y = x.clone();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  cvattn::bench::set_bytes(state, 2.0 * static_cast<double>(x.nbytes()));
}

}  // namespace

BENCHMARK(BM_MemcpyReference)
    ->ArgName("cold")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_CloneReference)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SqueezeExcitation)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Eca)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Cbam)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_SqueezeExcitationCold)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_CbamCold)->Apply(cvattn::bench::one_and_all_threads);

// Channel attention (SqueezeExcitation, Eca, Cbam) on [8, 256, 28, 28], plus the machine's copy
// bandwidth as the reference: these modules are memory bound, and the floor is one read of x and
// one write of y (what a copy moves). Arg = threads (cvattn::set_num_threads).
//
// Counter "GB/s" = (bytes of x + bytes of y) / time, the same definition for the copy, so the
// modules' figure reads directly as a fraction of the copy bandwidth.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

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

void set_bandwidth(benchmark::State& state, double bytes_per_iteration) {
  state.counters["GB/s"] = benchmark::Counter(bytes_per_iteration * 1e-9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

template <class M>
void run_module(benchmark::State& state, const M& module) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor x = cvattn::test::random_tensor(kShape, 1, -2.0f, 2.0f);
  for (auto _ : state) {
    Tensor y = module.forward(x);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_bandwidth(state, 2.0 * static_cast<double>(x.nbytes()));
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

// memcpy of the same 6.4 MB into a preallocated buffer (one thread): the bandwidth reference.
void BM_MemcpyReference(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor(kShape, 1);
  std::vector<float> dst(static_cast<std::size_t>(x.numel()));
  for (auto _ : state) {
    std::memcpy(dst.data(), x.data(), static_cast<std::size_t>(x.nbytes()));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_bandwidth(state, 2.0 * static_cast<double>(x.nbytes()));
}

// Tensor::clone(): a copy into a freshly allocated tensor, as every forward() returns one.
void BM_CloneReference(benchmark::State& state) {
  const Tensor x = cvattn::test::random_tensor(kShape, 1);
  for (auto _ : state) {
    Tensor y = x.clone();
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_bandwidth(state, 2.0 * static_cast<double>(x.nbytes()));
}

}  // namespace

BENCHMARK(BM_MemcpyReference)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CloneReference)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SqueezeExcitation)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Eca)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Cbam)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// timm's channel/context gates on [8, 256, 28, 28] and dynamic convolution / CondConv2d
// (64 -> 64, 3x3, K = 4) on [8, 64, 56, 56], issue 19's shapes; plus the functional kernels the
// gates are made of, so a slow module can be read step by step. Arg = threads.
// Counter "GB/s" for the gates = (bytes of x + bytes of y) / time, as bench_channel.
#include <benchmark/benchmark.h>

#include <string>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/functional/gates.hpp"
#include "cvattn/modules/ceca.hpp"
#include "cvattn/modules/cond_conv.hpp"
#include "cvattn/modules/coord_attn.hpp"
#include "cvattn/modules/dynamic_conv.hpp"
#include "cvattn/modules/effective_se.hpp"
#include "cvattn/modules/gather_excite.hpp"
#include "cvattn/modules/global_context.hpp"
#include "cvattn/modules/light_cbam.hpp"
#include "cvattn/modules/split_attn.hpp"
#include "support/random.hpp"

using cvattn::Shape;
using cvattn::StateDict;
using cvattn::Tensor;
namespace F = cvattn::functional;

namespace {

const Shape kGateShape = {8, 256, 28, 28};
const Shape kConvShape = {8, 64, 56, 56};

// Small weights (unsaturated gates) and unit running variances.
void randomize(cvattn::Module& module) {
  const StateDict current = module.state_dict();
  StateDict filled;
  std::uint64_t seed = 100;
  for (const auto& e : current.entries()) {
    if (e.integer) continue;
    Tensor t = cvattn::test::random_tensor(e.value.shape(), seed++, -0.1f, 0.1f);
    if (e.key.find("running_var") != std::string::npos) t.fill(1.0f);
    filled.set(e.key, t);
  }
  module.load_state_dict(filled, cvattn::Strict::no);
}

template <class M>
void run_gate(benchmark::State& state, M&& module, bool maps = false) {
  randomize(module);
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor x = cvattn::test::random_tensor(kGateShape, 1, -2.0f, 2.0f);
  for (auto _ : state) {
    Tensor y = maps ? module.forward_with_maps(x).output : module.forward(x);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  cvattn::bench::set_bytes(state, 2.0 * static_cast<double>(x.nbytes()));
}

const std::int64_t kC = kGateShape[1];

void BM_EffectiveSe(benchmark::State& s) {
  run_gate(s, cvattn::EffectiveSqueezeExcitation(cvattn::EffectiveSqueezeExcitationOptions(kC)));
}
void BM_Ceca(benchmark::State& s) { run_gate(s, cvattn::Ceca(cvattn::CecaOptions(kC))); }
void BM_GatherExcite(benchmark::State& s) {
  run_gate(s, cvattn::GatherExcite(cvattn::GatherExciteOptions(kC)));
}
void BM_GatherExciteWithMaps(benchmark::State& s) {
  run_gate(s, cvattn::GatherExcite(cvattn::GatherExciteOptions(kC)), true);
}
void BM_GatherExciteExtent4Params(benchmark::State& s) {
  run_gate(s, cvattn::GatherExcite(cvattn::GatherExciteOptions(kC).extent(4).extra_params(true)));
}
void BM_GlobalContext(benchmark::State& s) {
  run_gate(s, cvattn::GlobalContext(cvattn::GlobalContextOptions(kC).fuse_add(true)));
}
void BM_LightCbam(benchmark::State& s) {
  run_gate(s, cvattn::LightCbam(cvattn::LightCbamOptions(kC, 16)));
}
void BM_CoordAttn(benchmark::State& s) {
  run_gate(s, cvattn::CoordAttn(cvattn::CoordAttnOptions(kC, 16)));
}
void BM_SplitAttn(benchmark::State& s) {
  run_gate(s, cvattn::SplitAttn(cvattn::SplitAttnOptions(kC, kC / 2).norm(true)));
}

void BM_DynamicConv(benchmark::State& state) {
  cvattn::DynamicConv2d m(cvattn::DynamicConv2dOptions(64, 64, 3).padding(1).hidden(16));
  randomize(m);
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor x = cvattn::test::random_tensor(kConvShape, 1);
  for (auto _ : state) {
    Tensor y = m.forward(x);
    benchmark::DoNotOptimize(y.data());
  }
  cvattn::bench::set_flops(state, cvattn::bench::conv_flops(8, 64, 56, 56, 64, 3, 3));
}

void BM_CondConv(benchmark::State& state) {
  cvattn::CondConv2d m(cvattn::CondConv2dOptions(64, 64, 3));
  randomize(m);
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor x = cvattn::test::random_tensor(kConvShape, 1);
  const Tensor r = cvattn::test::random_tensor({8, 4}, 2, 0.0f, 1.0f);
  for (auto _ : state) {
    Tensor y = m.forward(x, r);
    benchmark::DoNotOptimize(y.data());
  }
  cvattn::bench::set_flops(state, cvattn::bench::conv_flops(8, 64, 56, 56, 64, 3, 3));
}

// The kernels, one thread.
void BM_Kernel(benchmark::State& state, int which) {
  cvattn::set_num_threads(1);
  const Tensor x = cvattn::test::random_tensor(kGateShape, 1);
  const Tensor g = cvattn::test::random_tensor({8, kC}, 2);
  const Tensor w = cvattn::test::random_tensor({1, kC, 1, 1}, 3);
  const Tensor b = cvattn::test::random_tensor({1}, 4);
  for (auto _ : state) {
    switch (which) {
      case 0:
        benchmark::DoNotOptimize(F::channel_pool(x).data());
        break;
      case 1:
        benchmark::DoNotOptimize(F::channel_pool(x, true).data());
        break;
      case 2:
        benchmark::DoNotOptimize(F::scale_channels(x, g).data());
        break;
      case 3:
        benchmark::DoNotOptimize(F::channel_mean_max_blend(x).data());
        break;
      case 4:
        benchmark::DoNotOptimize(F::attention_pool(x, w, b).first.data());
        break;
      case 5:
        benchmark::DoNotOptimize(F::strip_pool(x).first.data());
        break;
      case 6:
        benchmark::DoNotOptimize(
            F::upsample_nearest(g.reshape({8, kC, 1, 1}), cvattn::Pair2(28, 28)).data());
        break;
      default:
        break;
    }
  }
}

}  // namespace

BENCHMARK(BM_EffectiveSe)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_Ceca)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_GatherExcite)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_GatherExciteWithMaps)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_GatherExciteExtent4Params)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_GlobalContext)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_LightCbam)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_CoordAttn)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_SplitAttn)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_DynamicConv)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_CondConv)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK_CAPTURE(BM_Kernel, channel_pool, 0)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Kernel, channel_pool_max, 1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Kernel, scale_channels, 2)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Kernel, channel_mean_max_blend, 3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Kernel, attention_pool, 4)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Kernel, strip_pool, 5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Kernel, upsample_nearest, 6)->Unit(benchmark::kMillisecond);

// timm's self-attention ByobNets (issue 20) at one thread, batch 1, 256x256 (their default
// size): botnet26t_256, halonet26t, lambda_resnet26t, with and without the attention maps.
// Weights are generated (tests/support/model_weights.hpp); the timing does not depend on their
// values. PyTorch reference: bench/compare_models.py --only byob.
#include <benchmark/benchmark.h>

#include <string>

#include "cvattn/core/parallel.hpp"
#include "cvattn/models/timm.hpp"
#include "support/model_weights.hpp"

namespace {

void run_model(benchmark::State& state, const std::string& name, bool maps) {
  cvattn::set_num_threads(1);
  const auto skeleton = cvattn::models::build(name);
  const auto net =
      cvattn::models::create(name, cvattn::test::generated_state_dict(*skeleton, 1).dict);
  const cvattn::Tensor x = cvattn::test::generated("input", {state.range(0), 3, 256, 256}, 2);
  // One call first: conv weights are packed and transformed on first use (Conv2dWeight), and
  // the figure is the steady state a deployed network runs at.
  (void)net->run(x, maps);
  for (auto _ : state) {
    cvattn::models::NetworkOutput out = net->run(x, maps);
    benchmark::DoNotOptimize(out.logits.data());
    benchmark::ClobberMemory();
  }
  state.counters["images/s"] = benchmark::Counter(static_cast<double>(state.range(0)),
                                                  benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Botnet26t(benchmark::State& state) { run_model(state, "botnet26t_256", false); }
void BM_Botnet26tWithMaps(benchmark::State& state) { run_model(state, "botnet26t_256", true); }
void BM_Halonet26t(benchmark::State& state) { run_model(state, "halonet26t", false); }
void BM_Halonet26tWithMaps(benchmark::State& state) { run_model(state, "halonet26t", true); }
void BM_LambdaResnet26t(benchmark::State& state) { run_model(state, "lambda_resnet26t", false); }

BENCHMARK(BM_Botnet26t)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Botnet26tWithMaps)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Halonet26t)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Halonet26tWithMaps)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LambdaResnet26t)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

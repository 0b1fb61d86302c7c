// Whole timm networks (issue 20) at one thread: seresnet18 at 224x224, batch 1 and 8, plus
// vit_tiny_patch16_224 and resnet50 at batch 1. Weights are generated (tests/support/
// model_weights.hpp); the timing does not depend on their values. PyTorch reference:
// bench/compare_models.py (the same models through `cvattn run timm_model`).
#include <benchmark/benchmark.h>

#include <string>

#include "cvattn/core/parallel.hpp"
#include "cvattn/models/timm.hpp"
#include "support/model_weights.hpp"

namespace {

std::shared_ptr<cvattn::models::Network> make(const std::string& name) {
  const auto skeleton = cvattn::models::build(name);
  return cvattn::models::create(name, cvattn::test::generated_state_dict(*skeleton, 1).dict);
}

void run_model(benchmark::State& state, const std::string& name, bool maps) {
  cvattn::set_num_threads(1);
  const auto net = make(name);
  const cvattn::Tensor x = cvattn::test::generated("input", {state.range(0), 3, 224, 224}, 2);
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

void BM_Seresnet18(benchmark::State& state) { run_model(state, "seresnet18", false); }
void BM_Seresnet18WithMaps(benchmark::State& state) { run_model(state, "seresnet18", true); }
void BM_Resnet50(benchmark::State& state) { run_model(state, "resnet50", false); }
void BM_VitTiny(benchmark::State& state) { run_model(state, "vit_tiny_patch16_224", false); }
void BM_VitTinyWithMaps(benchmark::State& state) { run_model(state, "vit_tiny_patch16_224", true); }

BENCHMARK(BM_Seresnet18)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Seresnet18WithMaps)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Resnet50)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_VitTiny)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_VitTinyWithMaps)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

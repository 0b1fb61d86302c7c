// timm's MobileNetV3 / EfficientNet networks (issue 20) at one thread, 224x224, batch 1 and 8.
// Weights are generated (tests/support/model_weights.hpp); the timing does not depend on their
// values. PyTorch reference: bench/compare_models.py --only mobilenetv3_small_100:1,...
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

void BM_MobileNetV3Small(benchmark::State& state) {
  run_model(state, "mobilenetv3_small_100", false);
}
void BM_MobileNetV3SmallWithMaps(benchmark::State& state) {
  run_model(state, "mobilenetv3_small_100", true);
}
void BM_MobileNetV3Large(benchmark::State& state) {
  run_model(state, "mobilenetv3_large_100", false);
}
void BM_EfficientNetB0(benchmark::State& state) { run_model(state, "efficientnet_b0", false); }
void BM_EfficientNetB0WithMaps(benchmark::State& state) {
  run_model(state, "efficientnet_b0", true);
}
void BM_EfficientNetCcB0(benchmark::State& state) {
  run_model(state, "efficientnet_cc_b0_4e", false);
}

BENCHMARK(BM_MobileNetV3Small)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MobileNetV3SmallWithMaps)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MobileNetV3Large)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EfficientNetB0)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EfficientNetB0WithMaps)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_EfficientNetCcB0)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

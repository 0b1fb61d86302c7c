// swin_tiny_patch4_window7_224 and resnest14d (issue 20) at one thread, batch 1 and 8, at
// 224x224, plus the window-attention kernel of Swin's first stage. Weights are generated
// (tests/support/model_weights.hpp); the timing does not depend on their values. PyTorch
// reference: bench/compare_models.py (the same models through `cvattn run timm_model`).
#include <benchmark/benchmark.h>

#include <string>

#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/window_attention.hpp"
#include "cvattn/models/timm.hpp"
#include "support/model_weights.hpp"

namespace {

namespace F = cvattn::functional;

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

void BM_SwinTiny(benchmark::State& state) {
  run_model(state, "swin_tiny_patch4_window7_224", false);
}
void BM_SwinTinyWithMaps(benchmark::State& state) {
  run_model(state, "swin_tiny_patch4_window7_224", true);
}
void BM_Resnest14d(benchmark::State& state) { run_model(state, "resnest14d", false); }

// Stage 1 of swin_tiny: 64 windows of 49 tokens per image, 3 heads of 32, shifted (bias + mask).
void BM_WindowAttentionStage1(benchmark::State& state) {
  cvattn::set_num_threads(1);
  const std::int64_t n = state.range(0), windows = 64, heads = 3;
  const cvattn::Tensor qkv = cvattn::test::generated("input", {n * windows, 49, 3 * 96}, 3);
  const cvattn::Tensor bias = cvattn::test::generated("input", {windows, heads, 49, 49}, 4);
  for (auto _ : state) {
    F::AttentionResult r =
        F::window_attention(qkv, heads, bias, F::WindowAttentionOptions().need_weights(false));
    benchmark::DoNotOptimize(r.output.data());
  }
}

// Stage 1's partition (shifted) and reverse, [N, 56, 56, 96].
void BM_WindowPartitionReverse(benchmark::State& state) {
  cvattn::set_num_threads(1);
  const cvattn::Tensor x = cvattn::test::generated("input", {state.range(0), 56, 56, 96}, 5);
  for (auto _ : state) {
    const cvattn::Tensor w = F::window_partition(x, cvattn::Pair2(7), cvattn::Pair2(3));
    const cvattn::Tensor y =
        F::window_reverse(w, cvattn::Pair2(56), cvattn::Pair2(7), cvattn::Pair2(3));
    benchmark::DoNotOptimize(y.data());
  }
}

BENCHMARK(BM_SwinTiny)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SwinTinyWithMaps)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Resnest14d)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_WindowAttentionStage1)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_WindowPartitionReverse)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

// Spatial self-attention (issue 19) on the shape the issue names, [2, 256, 16, 16]: timm's
// BottleneckAttn (4 heads, full 256x256 attention), HaloAttn (8 heads, blocks 8, halo 3),
// LambdaLayer (r = 9 and relative embeddings), mmcv's GeneralizedAttention ('1111', kv_stride
// 2, and '1000'), BatNonLocalAttn on [2, 256, 14, 14] (block 7), and the docs/modules.md §19
// mechanisms on [8, 64, 96] queries and keys. Arg = threads (cvattn::set_num_threads).
#include <benchmark/benchmark.h>

#include <string>

#include "bench_counters.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/functional/survey_attention.hpp"
#include "cvattn/modules/bat.hpp"
#include "cvattn/modules/bottleneck_attn.hpp"
#include "cvattn/modules/generalized_attention.hpp"
#include "cvattn/modules/halo_attn.hpp"
#include "cvattn/modules/lambda_layer.hpp"
#include "support/random.hpp"

using cvattn::Shape;
using cvattn::StateDict;
using cvattn::Tensor;

namespace {

const Shape kShape = {2, 256, 16, 16};

template <class M>
void randomize(M& module, float scale = 0.1f) {
  const StateDict current = module.state_dict();
  StateDict filled;
  std::uint64_t seed = 300;
  for (const auto& e : current.entries()) {
    if (e.integer) continue;
    Tensor t = cvattn::test::random_tensor(e.value.shape(), seed++, -scale, scale);
    if (e.key.find("running_var") != std::string::npos) t.fill(1.0f);
    filled.set(e.key, t);
  }
  module.load_state_dict(filled);
}

template <class M>
void run_module(benchmark::State& state, const M& module, const Shape& shape = kShape) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor x = cvattn::test::random_tensor(shape, 1, -2.0f, 2.0f);
  for (auto _ : state) {
    Tensor y = module.forward(x);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
}

void BM_BottleneckAttn(benchmark::State& state) {
  cvattn::BottleneckAttn m{cvattn::BottleneckAttnOptions(256, cvattn::Pair2(16))};
  randomize(m);
  run_module(state, m);
}

void BM_HaloAttn(benchmark::State& state) {
  cvattn::HaloAttn m{cvattn::HaloAttnOptions(256)};
  randomize(m);
  run_module(state, m);
}

void BM_LambdaLayer(benchmark::State& state) {
  cvattn::LambdaLayer m{cvattn::LambdaLayerOptions(256)};
  randomize(m);
  run_module(state, m);
}

void BM_LambdaLayerRelPos(benchmark::State& state) {
  cvattn::LambdaLayer m{cvattn::LambdaLayerOptions(256).r(0).feat_size(cvattn::Pair2(16))};
  randomize(m);
  run_module(state, m);
}

void BM_GeneralizedAttention(benchmark::State& state) {
  cvattn::GeneralizedAttention m{cvattn::GeneralizedAttentionOptions(256).num_heads(8)};
  randomize(m);
  run_module(state, m);
}

void BM_GeneralizedAttention1000(benchmark::State& state) {
  cvattn::GeneralizedAttention m{
      cvattn::GeneralizedAttentionOptions(256).num_heads(8).attention_type("1000")};
  randomize(m);
  run_module(state, m);
}

void BM_BatNonLocalAttn(benchmark::State& state) {
  cvattn::BatNonLocalAttn m{cvattn::BatNonLocalAttnOptions(256)};
  randomize(m, 0.3f);
  run_module(state, m, {2, 256, 14, 14});
}

namespace F = cvattn::functional;

struct Survey {
  Tensor q = cvattn::test::random_tensor({8, 64, 96}, 1);
  Tensor k = cvattn::test::random_tensor({8, 96, 96}, 2);
  Tensor v = cvattn::test::random_tensor({8, 96, 96}, 3);
};

void BM_ThresholdedAttention(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Survey s;
  for (auto _ : state) {
    auto r = F::attend_thresholded(s.q, s.k, s.v, F::Score::scaled_dot, 0.02);
    benchmark::DoNotOptimize(r.output.data());
  }
}

void BM_StochasticHardAttention16(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Survey s;
  for (auto _ : state) {
    auto r = F::attend_stochastic(s.q, s.k, s.v, F::Score::scaled_dot,
                                  F::StochasticOptions().samples(16).seed(1));
    benchmark::DoNotOptimize(r.output.data());
  }
}

void BM_LuongLocalP(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Survey s;
  const F::LuongLocalOptions o = F::LuongLocalOptions()
                                     .alignment(F::LocalAlignment::predictive)
                                     .window(8)
                                     .position_weight(cvattn::test::random_tensor({32, 96}, 4))
                                     .position_vector(cvattn::test::random_tensor({32}, 5));
  for (auto _ : state) {
    auto r = F::luong_local_attention(s.q, s.k, s.v, F::Score::dot, o);
    benchmark::DoNotOptimize(r.output.data());
  }
}

}  // namespace

BENCHMARK(BM_BottleneckAttn)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_HaloAttn)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_LambdaLayer)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_LambdaLayerRelPos)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_GeneralizedAttention)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_GeneralizedAttention1000)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_BatNonLocalAttn)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_ThresholdedAttention)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_StochasticHardAttention16)->Apply(cvattn::bench::one_and_all_threads);
BENCHMARK(BM_LuongLocalP)->Apply(cvattn::bench::one_and_all_threads);

// Benchmarks for the attention family (functional part). PyTorch 1.13 baselines for the same
// shapes: bench/torch_attention_baseline.py (run with OMP_NUM_THREADS=1).
#include <benchmark/benchmark.h>

#include <cmath>
#include <set>

#include "cvattn/core/parallel.hpp"
#include "cvattn/functional/attention.hpp"
#include "cvattn/functional/position_encoding.hpp"
#include "cvattn/functional/score.hpp"
#include "cvattn/functional/sparse_attention.hpp"
#include "cvattn/modules/multihead_attention.hpp"
#include "cvattn/modules/non_local.hpp"
#include "support/random.hpp"

namespace F = cvattn::functional;
using cvattn::Tensor;

namespace {

// sdpa on q = k = v shape [8, 8, 196, 32] (ViT-B/16-like tokens, 8 heads of 32).
void BM_Sdpa(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const bool weights = state.range(1) != 0;
  const Tensor q = cvattn::test::random_tensor({8, 8, 196, 32}, 1);
  const Tensor k = cvattn::test::random_tensor({8, 8, 196, 32}, 2);
  const Tensor v = cvattn::test::random_tensor({8, 8, 196, 32}, 3);
  const auto opts = F::SdpaOptions().need_weights(weights);
  for (auto _ : state) {
    auto r = F::scaled_dot_product_attention(q, k, v, {}, opts);
    benchmark::DoNotOptimize(r.output.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * 64 * 196 * 196 * 64, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_Sdpa)
    ->ArgNames({"threads", "weights"})
    ->Args({1, 1})
    ->Args({1, 0})
    ->Args({2, 1})
    ->Args({2, 0})
    ->Unit(benchmark::kMillisecond);

// The packed-heads entry MHA uses: [8, 196, 256] with 8 heads of 32.
void BM_SdpaHeads(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor q = cvattn::test::random_tensor({8, 196, 256}, 1);
  const Tensor k = cvattn::test::random_tensor({8, 196, 256}, 2);
  const Tensor v = cvattn::test::random_tensor({8, 196, 256}, 3);
  for (auto _ : state) {
    auto r =
        F::scaled_dot_product_attention_heads(q, k, v, 8, {}, F::SdpaOptions().need_weights(false));
    benchmark::DoNotOptimize(r.output.data());
  }
}
BENCHMARK(BM_SdpaHeads)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// Random weights for a module (the values do not change the work).
template <class M>
void randomise(M& m) {
  cvattn::StateDict w;
  std::uint64_t seed = 11;
  const cvattn::StateDict current = m.state_dict();
  for (const auto& e : current.entries()) {
    if (e.integer) continue;
    w.set(e.key, cvattn::test::random_tensor(e.value.shape(), seed++, -0.1f, 0.1f));
  }
  m.load_state_dict(w, cvattn::Strict::no);
}

// nn.MultiheadAttention(256, 8, batch_first=True) self-attention on [8, 196, 256], with and
// without the head-averaged weights (PyTorch's need_weights default is true).
void BM_Mha(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  cvattn::MultiheadAttention m(cvattn::MultiheadAttentionOptions(256, 8));
  randomise(m);
  const Tensor x = cvattn::test::random_tensor({8, 196, 256}, 1);
  const auto call = cvattn::MultiheadAttentionCall().need_weights(state.range(1) != 0);
  for (auto _ : state) {
    auto r = m.forward(x, x, x, call);
    benchmark::DoNotOptimize(r.output.data());
  }
}
BENCHMARK(BM_Mha)
    ->ArgNames({"threads", "weights"})
    ->Args({1, 1})
    ->Args({1, 0})
    ->Args({2, 1})
    ->Args({2, 0})
    ->Unit(benchmark::kMillisecond);

// timm NonLocalAttn(64) on [2, 64, 28, 28] (784 positions, R = 8), with and without the map.
void BM_NonLocal(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  cvattn::NonLocalAttn m(cvattn::NonLocalAttnOptions(64));
  randomise(m);
  const Tensor x = cvattn::test::random_tensor({2, 64, 28, 28}, 1);
  const bool maps = state.range(1) != 0;
  for (auto _ : state) {
    if (maps) {
      auto r = m.forward_with_maps(x);
      benchmark::DoNotOptimize(r.output.data());
    } else {
      auto y = m.forward(x);
      benchmark::DoNotOptimize(y.data());
    }
  }
}
BENCHMARK(BM_NonLocal)
    ->ArgNames({"threads", "maps"})
    ->Args({1, 1})
    ->Args({1, 0})
    ->Args({2, 1})
    ->Unit(benchmark::kMillisecond);

// Local attention on a [1, 64, 56, 56] map, 7x7 window (D = 3).
void BM_LocalAttention(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const Tensor q = cvattn::test::random_tensor({1, 64, 56, 56}, 1);
  const Tensor k = cvattn::test::random_tensor({1, 64, 56, 56}, 2);
  const Tensor v = cvattn::test::random_tensor({1, 64, 56, 56}, 3);
  for (auto _ : state) {
    auto r = F::local_attention(q, k, v, 3);
    benchmark::DoNotOptimize(r.output.data());
  }
}
BENCHMARK(BM_LocalAttention)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// Keys around 64 centres (structure ANN search can exploit) or plain Gaussian noise.
void make_keys(bool clustered, std::int64_t L, std::int64_t S, std::int64_t E, Tensor& q,
               Tensor& k) {
  cvattn::test::Random rng(5);
  const auto gauss = [&] {  // Box-Muller on the portable PRNG
    const double u1 = std::max(1e-12, static_cast<double>(rng.uniform(0, 1)));
    const double u2 = rng.uniform(0, 1);
    return static_cast<float>(std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  };
  Tensor centres = Tensor::empty({64, E});
  for (std::int64_t i = 0; i < centres.numel(); ++i) centres[i] = gauss();
  const auto fill = [&](Tensor& t, std::int64_t rows) {
    t = Tensor::empty({1, rows, E});
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t c = static_cast<std::int64_t>(rng.next() % 64);
      for (std::int64_t e = 0; e < E; ++e) {
        t[r * E + e] = clustered ? centres[c * E + e] + 0.35f * gauss() : gauss();
      }
    }
  };
  fill(q, L);
  fill(k, S);
}

// Key selection, 64 dims, top-32: exact vs FLANN kd-tree vs LSH, at 4096 queries x 4096 keys
// and 2048 queries x 65536 keys (index build included: keys change with every call).
// Counters: recall of the exact top-32, max |output - exact top-32 output| and
// max |output - dense attention output|.
void BM_SelectKeys(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  const auto method = static_cast<F::KeySearch>(state.range(1));
  const bool clustered = state.range(2) != 0;
  const int param = static_cast<int>(state.range(3));  // kdtree: checks; lsh: multi-probe level
  const std::int64_t S = state.range(4), L = S > 4096 ? 2048 : 4096;
  Tensor q, k;
  make_keys(clustered, L, S, 64, q, k);
  const Tensor v = cvattn::test::random_tensor({1, S, 64}, 9);
  auto opts = F::KeySearchOptions().top_k(32).method(method);
  if (method == F::KeySearch::kdtree) opts.checks(param);
  if (method == F::KeySearch::lsh) opts.multi_probe_level(param);
  F::KeySelection sel;
  for (auto _ : state) {
    sel = F::select_keys(q, k, opts);
    benchmark::DoNotOptimize(sel.indices.data());
  }
  const auto exact = F::select_keys(q, k, F::KeySearchOptions().top_k(32));
  std::int64_t hit = 0;
  for (std::size_t row = 0; row < static_cast<std::size_t>(L); ++row) {
    const std::set<std::int32_t> truth(exact.indices.begin() + row * 32,
                                       exact.indices.begin() + (row + 1) * 32);
    for (int i = 0; i < 32; ++i) hit += truth.count(sel.indices[row * 32 + i]);
  }
  const auto approx_out = F::attend_selected(q, k, v, sel).output;
  const auto exact_out = F::attend_selected(q, k, v, exact).output;
  const auto dense_out =
      F::scaled_dot_product_attention(q, k, v, {}, F::SdpaOptions().need_weights(false)).output;
  double err_exact = 0, err_dense = 0;
  for (std::int64_t i = 0; i < approx_out.numel(); ++i) {
    err_exact = std::max(err_exact, double(std::fabs(approx_out[i] - exact_out[i])));
    err_dense = std::max(err_dense, double(std::fabs(approx_out[i] - dense_out[i])));
  }
  state.counters["recall"] = static_cast<double>(hit) / (static_cast<double>(L) * 32);
  state.counters["err_vs_topk"] = err_exact;
  state.counters["err_vs_dense"] = err_dense;
}
BENCHMARK(BM_SelectKeys)
    ->ArgNames({"threads", "method", "clustered", "param", "S"})
    ->Args({1, 0, 1, 0, 4096})
    ->Args({1, 1, 1, 64, 4096})
    ->Args({1, 1, 1, 256, 4096})
    ->Args({1, 1, 1, 1024, 4096})
    ->Args({1, 2, 1, 1, 4096})
    ->Args({1, 2, 1, 2, 4096})
    ->Args({1, 0, 0, 0, 4096})
    ->Args({1, 1, 0, 256, 4096})
    ->Args({1, 1, 0, 1024, 4096})
    ->Args({1, 2, 0, 2, 4096})
    ->Args({2, 0, 1, 0, 4096})
    ->Args({2, 1, 1, 256, 4096})
    ->Args({2, 2, 1, 2, 4096})
    ->Args({1, 0, 1, 0, 65536})
    ->Args({1, 1, 1, 64, 65536})
    ->Args({1, 1, 1, 256, 65536})
    ->Args({1, 2, 1, 1, 65536})
    ->Args({1, 2, 1, 2, 65536})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// Dense attention at the same size for comparison with the sparse variants.
void BM_SdpaDense4096(benchmark::State& state) {
  cvattn::set_num_threads(static_cast<int>(state.range(0)));
  Tensor q, k;
  make_keys(true, 4096, 4096, 64, q, k);
  const Tensor v = cvattn::test::random_tensor({1, 4096, 64}, 9);
  for (auto _ : state) {
    auto r = F::scaled_dot_product_attention(q, k, v, {}, F::SdpaOptions().need_weights(false));
    benchmark::DoNotOptimize(r.output.data());
  }
}
BENCHMARK(BM_SdpaDense4096)->ArgNames({"threads"})->Arg(1)->Unit(benchmark::kMillisecond);

void BM_AttendSelected(benchmark::State& state) {
  cvattn::set_num_threads(1);
  Tensor q, k;
  make_keys(true, 4096, 4096, 64, q, k);
  const Tensor v = cvattn::test::random_tensor({1, 4096, 64}, 9);
  const auto sel = F::select_keys(q, k, F::KeySearchOptions().top_k(32));
  for (auto _ : state) {
    auto r = F::attend_selected(q, k, v, sel);
    benchmark::DoNotOptimize(r.output.data());
  }
}
BENCHMARK(BM_AttendSelected)->Unit(benchmark::kMillisecond);

// Score functions + normalisers on [8, 196, 64] x [8, 196, 64].
void BM_Attend(benchmark::State& state) {
  cvattn::set_num_threads(1);
  const auto score = static_cast<F::Score>(state.range(0));
  const auto norm = static_cast<F::Normalizer>(state.range(1));
  const Tensor q = cvattn::test::random_tensor({8, 196, 64}, 1);
  const Tensor k = cvattn::test::random_tensor({8, 196, 64}, 2);
  const Tensor v = cvattn::test::random_tensor({8, 196, 64}, 3);
  F::ScoreParams p;
  p.weight = cvattn::test::random_tensor({64, 64}, 4);
  p.query_weight = cvattn::test::random_tensor({32, 64}, 5);
  p.key_weight = cvattn::test::random_tensor({32, 64}, 6);
  p.vector = cvattn::test::random_tensor({32}, 7);
  for (auto _ : state) {
    auto r = F::attend(q, k, v, score, norm, p, 8);
    benchmark::DoNotOptimize(r.output.data());
  }
}
BENCHMARK(BM_Attend)
    ->ArgNames({"score", "normalizer"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({2, 0})
    ->Args({3, 0})
    ->Args({4, 0})
    ->Args({1, 1})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond);

void BM_PositionEncodingSine(benchmark::State& state) {
  cvattn::set_num_threads(1);
  for (auto _ : state) {
    auto pos = F::position_encoding_sine({2, 256, 32, 32});
    benchmark::DoNotOptimize(pos.data());
  }
}
BENCHMARK(BM_PositionEncodingSine)->Unit(benchmark::kMillisecond);

void BM_RelativePositionBias(benchmark::State& state) {
  const Tensor table = cvattn::test::random_tensor({13 * 13, 8}, 1);
  for (auto _ : state) {
    auto bias = F::relative_position_bias(table, cvattn::Pair2(7, 7));
    benchmark::DoNotOptimize(bias.data());
  }
}
BENCHMARK(BM_RelativePositionBias)->Unit(benchmark::kMicrosecond);

void BM_FlattenSpatial(benchmark::State& state) {
  cvattn::set_num_threads(1);
  const Tensor x = cvattn::test::random_tensor({8, 256, 14, 14}, 1);
  for (auto _ : state) {
    auto t = F::unflatten_spatial(F::flatten_spatial(x), 14, 14);
    benchmark::DoNotOptimize(t.data());
  }
}
BENCHMARK(BM_FlattenSpatial)->Unit(benchmark::kMillisecond);

}  // namespace

// scaled_dot_product_attention (docs/modules.md §11, §14), its packed-heads entry, and the
// spatial <-> token helpers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/attention.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace F = cvattn::functional;
using cvattn::Shape;
using cvattn::Tensor;
using cvattn::test::Tolerance;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

const float kInf = std::numeric_limits<float>::infinity();

std::vector<cvattn::test::Fixture> cases(const std::string& prefix) {
  return cvattn::test::fixtures_in("attention", prefix);
}

F::SdpaOptions options_of(const cvattn::test::Fixture& fx) {
  const auto& p = fx.params();
  F::SdpaOptions o;
  o.is_causal(p.value("is_causal", false));
  if (p.contains("scale")) o.scale(p["scale"].get<double>());
  if (p.value("mask_type", std::string("additive")) == "boolean") {
    o.mask_type(F::MaskType::boolean);
  }
  return o;
}

// Naive double-precision SDPA on [B, L, E] x [B, S, E] (mask [L, S] additive or empty), the
// oracle for shapes the fixtures do not cover.
void naive_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                double scale, Tensor& out, Tensor& w) {
  const auto B = q.dim(0), L = q.dim(1), E = q.dim(2), S = k.dim(1), Ev = v.dim(2);
  out = Tensor::zeros({B, L, Ev});
  w = Tensor::zeros({B, L, S});
  std::vector<double> s(static_cast<std::size_t>(S));
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t i = 0; i < L; ++i) {
      double m = -INFINITY;
      for (std::int64_t j = 0; j < S; ++j) {
        double acc = 0;
        for (std::int64_t e = 0; e < E; ++e)
          acc += double(q[(b * L + i) * E + e]) * k[(b * S + j) * E + e];
        acc *= scale;
        if (mask.defined()) acc += mask[i * S + j];
        if (causal && j > i) acc = -INFINITY;
        s[j] = acc;
        m = std::max(m, acc);
      }
      if (m == -INFINITY) continue;
      double sum = 0;
      for (auto& x : s) sum += (x = std::exp(x - m));
      for (std::int64_t j = 0; j < S; ++j) {
        const double p = s[j] / sum;
        w[(b * L + i) * S + j] = static_cast<float>(p);
        for (std::int64_t c = 0; c < Ev; ++c) {
          out[(b * L + i) * Ev + c] += static_cast<float>(p * v[(b * S + j) * Ev + c]);
        }
      }
    }
  }
}

// §14: x1..x3 projected by Wq, Wk, Wv (rows index input dims).
void seed_qkv(Tensor& q, Tensor& k, Tensor& v) {
  q = Tensor::from_vector({3, 3}, {1, 0, 2, 2, 2, 2, 2, 1, 3});
  k = Tensor::from_vector({3, 3}, {0, 1, 1, 4, 4, 0, 2, 3, 1});
  v = Tensor::from_vector({3, 3}, {1, 2, 3, 2, 8, 0, 2, 6, 3});
}

}  // namespace

TEST(ScaledDotProductAttention, FixturesCoverTheOptionSpace) {
  EXPECT_GE(cases("sdpa_").size(), 22u);
  EXPECT_GE(cases("heads_").size(), 4u);
}

TEST(ScaledDotProductAttention, MatchesPyTorchMath) {
  for (const auto& fx : cases("sdpa_")) {
    SCOPED_TRACE(fx.name());
    const Tensor mask = fx.has("attn_mask") ? fx.tensor("attn_mask") : Tensor();
    const auto opts = options_of(fx);
    const auto r = F::scaled_dot_product_attention(fx.tensor("query"), fx.tensor("key"),
                                                   fx.tensor("value"), mask, opts);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), Tolerance{});
    EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), Tolerance{});
  }
}

TEST(ScaledDotProductAttention, FusedPathWithoutWeightsGivesTheSameOutput) {
  for (const auto& fx : cases("sdpa_")) {
    SCOPED_TRACE(fx.name());
    const Tensor mask = fx.has("attn_mask") ? fx.tensor("attn_mask") : Tensor();
    auto opts = options_of(fx);
    opts.need_weights(false);
    const auto r = F::scaled_dot_product_attention(fx.tensor("query"), fx.tensor("key"),
                                                   fx.tensor("value"), mask, opts);
    EXPECT_FALSE(r.attn_weights.defined());
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), Tolerance{});
  }
}

TEST(ScaledDotProductAttention, SingleThreadMatchesPyTorch) {
  const cvattn::test::ThreadScope scope(1);
  for (const auto& fx : cases("sdpa_")) {
    SCOPED_TRACE(fx.name());
    const Tensor mask = fx.has("attn_mask") ? fx.tensor("attn_mask") : Tensor();
    const auto r = F::scaled_dot_product_attention(fx.tensor("query"), fx.tensor("key"),
                                                   fx.tensor("value"), mask, options_of(fx));
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), Tolerance{});
  }
}

TEST(ScaledDotProductAttention, PackedHeadsMatchPyTorch) {
  for (const auto& fx : cases("heads_")) {
    SCOPED_TRACE(fx.name());
    const Tensor mask = fx.has("attn_mask") ? fx.tensor("attn_mask") : Tensor();
    for (bool weights : {true, false}) {
      const auto r = F::scaled_dot_product_attention_heads(
          fx.tensor("query"), fx.tensor("key"), fx.tensor("value"),
          fx.params()["num_heads"].get<std::int64_t>(), mask,
          F::SdpaOptions().is_causal(fx.params()["is_causal"].get<bool>()).need_weights(weights));
      EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), Tolerance{});
      if (weights) {
        EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), Tolerance{});
      }
    }
  }
}

TEST(ScaledDotProductAttention, PackedQkvMatchesPyTorch) {
  for (const auto& fx : cases("qkv_")) {
    SCOPED_TRACE(fx.name());
    const Tensor mask = fx.has("attn_mask") ? fx.tensor("attn_mask") : Tensor();
    const std::int64_t heads = fx.params()["num_heads"].get<std::int64_t>();
    const auto opts = F::SdpaOptions().is_causal(fx.params()["is_causal"].get<bool>());
    for (bool weights : {true, false}) {
      const auto r = F::scaled_dot_product_attention_qkv(
          fx.tensor("qkv"), heads, mask, F::SdpaOptions(opts).need_weights(weights));
      EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), Tolerance{});
      if (weights) {
        EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), Tolerance{});
      } else {
        EXPECT_FALSE(r.attn_weights.defined());
      }
    }
    const auto avg =
        F::scaled_dot_product_attention_qkv_averaged(fx.tensor("qkv"), heads, mask, opts);
    EXPECT_TENSOR_NEAR(avg.output, fx.tensor("output"), Tolerance{});
    EXPECT_TENSOR_NEAR(avg.attn_weights, fx.tensor("attn_weights_avg"), Tolerance{});
  }
}

TEST(ScaledDotProductAttention, PackedQkvSingleThreadMatchesPyTorch) {
  const cvattn::test::ThreadScope scope(1);
  for (const auto& fx : cases("qkv_")) {
    SCOPED_TRACE(fx.name());
    const Tensor mask = fx.has("attn_mask") ? fx.tensor("attn_mask") : Tensor();
    const auto r = F::scaled_dot_product_attention_qkv_averaged(
        fx.tensor("qkv"), fx.params()["num_heads"].get<std::int64_t>(), mask,
        F::SdpaOptions().is_causal(fx.params()["is_causal"].get<bool>()));
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), Tolerance{});
    EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights_avg"), Tolerance{});
  }
}

TEST(ScaledDotProductAttention, PackedQkvErrorsNameTheProblem) {
  const Tensor qkv = Tensor::zeros({2, 5, 18});
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::scaled_dot_product_attention_qkv(qkv, 4); }),
              ThrowsMessage<cvattn::ShapeError>(HasSubstr(
                  "scaled_dot_product_attention_qkv: tensor 'qkv' expected [B, L, 3*num_heads*E] "
                  "with num_heads = 4 and E >= 1, got [2, 5, 18]")));
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::scaled_dot_product_attention_qkv(qkv, 0); }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("num_heads must be positive, got 0")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention_qkv(Tensor::zeros({5, 18}), 2);
              }),
              ThrowsMessage<cvattn::ShapeError>(HasSubstr("scaled_dot_product_attention_qkv")));
  EXPECT_THAT(
      cvattn::test::Call([&] {
        (void)F::scaled_dot_product_attention_qkv_averaged(qkv, 3, Tensor::zeros({2, 5, 6}));
      }),
      ThrowsMessage<cvattn::ShapeError>(HasSubstr("scaled_dot_product_attention_qkv")));
}

// docs/modules.md §14 with scale = 1: the 8-d.p. outputs (the spec states them within 1e-6).
TEST(ScaledDotProductAttention, SeedWorkedExample) {
  Tensor q, k, v;
  seed_qkv(q, k, v);
  for (bool weights : {true, false}) {
    const auto r = F::scaled_dot_product_attention(
        q, k, v, {}, F::SdpaOptions().scale(1.0).need_weights(weights));
    const Tensor expected = Tensor::from_vector(
        {3, 3}, {1.93662106f, 6.68310531f, 1.59506841f, 1.99999397f, 7.96399160f, 0.05397641f,
                 1.99970461f, 7.75989225f, 0.35838929f});
    EXPECT_TENSOR_NEAR(r.output, expected, (Tolerance{1e-6, 1e-6}));
    if (weights) {
      const Tensor p = Tensor::from_vector(
          {3, 3}, {0.06337894f, 0.46831053f, 0.46831053f, 0.00000603f, 0.98200786f, 0.01798610f,
                   0.00029539f, 0.88053690f, 0.11916771f});
      EXPECT_TENSOR_NEAR(r.attn_weights, p, (Tolerance{1e-7, 1e-6}));
    }
  }
}

// docs/modules.md §11: the seed example with the default scale 1/sqrt(3) (4 d.p. in the spec).
TEST(ScaledDotProductAttention, SeedExampleWithDefaultScale) {
  Tensor q, k, v;
  seed_qkv(q, k, v);
  const auto r = F::scaled_dot_product_attention(q, k, v);
  const Tensor expected = Tensor::from_vector(
      {3, 3}, {1.8639f, 6.3194f, 1.7042f, 1.9991f, 7.8141f, 0.2735f, 1.9926f, 7.4796f, 0.7359f});
  EXPECT_TENSOR_NEAR(r.output, expected, (Tolerance{5e-5, 0}));
}

TEST(ScaledDotProductAttention, MatchesNaiveReferenceOnOddShapes) {
  // Sizes around the 6-row / 16-column tiles and the 8-lane vectors, causal and masked; the
  // last key panel is 4 wide (S = 1, 17, 35, 36, 130), 8 wide (S = 22, 200) or 16 (S = 64).
  for (const auto& dims : std::vector<std::vector<std::int64_t>>{{1, 1, 1, 1, 1},
                                                                 {2, 13, 35, 5, 19},
                                                                 {1, 50, 17, 33, 16},
                                                                 {3, 7, 64, 8, 40},
                                                                 {1, 97, 130, 12, 7},
                                                                 {2, 19, 22, 9, 33},
                                                                 {1, 13, 36, 32, 32},
                                                                 {1, 7, 200, 16, 8}}) {
    const auto B = dims[0], L = dims[1], S = dims[2], E = dims[3], Ev = dims[4];
    const Tensor q = cvattn::test::random_tensor({B, L, E}, 11, -2, 2);
    const Tensor k = cvattn::test::random_tensor({B, S, E}, 12, -2, 2);
    const Tensor v = cvattn::test::random_tensor({B, S, Ev}, 13);
    Tensor mask = cvattn::test::random_tensor({L, S}, 14, -3, 3);
    for (std::int64_t i = 0; i < L * S; i += 7) mask[i] = -kInf;
    for (int variant = 0; variant < 3; ++variant) {
      SCOPED_TRACE(cvattn::to_string(dims) + " variant " + std::to_string(variant));
      const bool causal = variant == 1;
      const Tensor m = variant == 2 ? mask : Tensor();
      Tensor out, w;
      naive_sdpa(q, k, v, m, causal, 0.4, out, w);
      for (bool weights : {true, false}) {
        const auto r = F::scaled_dot_product_attention(
            q, k, v, m, F::SdpaOptions().scale(0.4).is_causal(causal).need_weights(weights));
        EXPECT_TENSOR_NEAR(r.output, out, Tolerance{});
        if (weights) {
          EXPECT_TENSOR_NEAR(r.attn_weights, w, Tolerance{});
        }
      }
    }
  }
}

TEST(ScaledDotProductAttention, WeightRowsSumToOne) {
  const Tensor q = cvattn::test::random_tensor({2, 3, 29, 16}, 1, -3, 3);
  const Tensor k = cvattn::test::random_tensor({2, 3, 41, 16}, 2, -3, 3);
  const Tensor v = cvattn::test::random_tensor({2, 3, 41, 8}, 3);
  const auto r = F::scaled_dot_product_attention(q, k, v);
  for (std::int64_t row = 0; row < 2 * 3 * 29; ++row) {
    double s = 0;
    for (std::int64_t j = 0; j < 41; ++j) s += r.attn_weights[row * 41 + j];
    EXPECT_NEAR(s, 1.0, 1e-5);
  }
}

TEST(ScaledDotProductAttention, MaskedKeysGetExactlyZeroWeight) {
  const Tensor q = cvattn::test::random_tensor({4, 8}, 1),
               k = cvattn::test::random_tensor({6, 8}, 2);
  const Tensor v = cvattn::test::random_tensor({6, 3}, 3);
  Tensor mask = Tensor::zeros({4, 6});
  mask[1] = -kInf;
  mask[6 + 5] = -kInf;
  const auto r = F::scaled_dot_product_attention(q, k, v, mask);
  EXPECT_EQ(r.attn_weights[1], 0.0f);
  EXPECT_EQ(r.attn_weights[6 + 5], 0.0f);
  const auto c = F::scaled_dot_product_attention(q, k, v, {}, F::SdpaOptions().is_causal(true));
  for (std::int64_t i = 0; i < 4; ++i) {
    for (std::int64_t j = i + 1; j < 6; ++j) EXPECT_EQ(c.attn_weights[i * 6 + j], 0.0f);
  }
}

TEST(ScaledDotProductAttention, FullyMaskedRowGivesZeros) {
  const Tensor q = cvattn::test::random_tensor({3, 4}, 1),
               k = cvattn::test::random_tensor({5, 4}, 2);
  const Tensor v = cvattn::test::random_tensor({5, 2}, 3);
  Tensor mask = Tensor::zeros({3, 5});
  for (int j = 0; j < 5; ++j) mask[5 + j] = -kInf;
  for (bool weights : {true, false}) {
    const auto r =
        F::scaled_dot_product_attention(q, k, v, mask, F::SdpaOptions().need_weights(weights));
    EXPECT_EQ(r.output[2], 0.0f);
    EXPECT_EQ(r.output[3], 0.0f);
    EXPECT_TRUE(r.output.all_finite());
  }
}

TEST(ScaledDotProductAttention, EmptyDimensions) {
  const auto none = F::scaled_dot_product_attention(
      Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 0, 4}), Tensor::zeros({2, 0, 5}));
  EXPECT_EQ(none.output.shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(none.attn_weights.shape(), (Shape{2, 3, 0}));
  for (std::int64_t i = 0; i < none.output.numel(); ++i) EXPECT_EQ(none.output[i], 0.0f);
  const auto empty = F::scaled_dot_product_attention(
      Tensor::zeros({0, 3, 4}), Tensor::zeros({0, 2, 4}), Tensor::zeros({0, 2, 5}));
  EXPECT_EQ(empty.output.shape(), (Shape{0, 3, 5}));
  const auto no_rows = F::scaled_dot_product_attention(Tensor::zeros({0, 4}), Tensor::zeros({2, 4}),
                                                       Tensor::zeros({2, 5}));
  EXPECT_EQ(no_rows.output.shape(), (Shape{0, 5}));
}

TEST(ScaledDotProductAttention, NonFiniteInputsDoNotCrash) {
  Tensor q = cvattn::test::random_tensor({2, 9, 8}, 1);
  const Tensor k = cvattn::test::random_tensor({2, 20, 8}, 2);
  const Tensor v = cvattn::test::random_tensor({2, 20, 8}, 3);
  q[3] = std::numeric_limits<float>::quiet_NaN();
  q[20] = kInf;
  q[30] = -kInf;
  const auto r = F::scaled_dot_product_attention(q, k, v);
  EXPECT_TRUE(std::isnan(r.output[0]));  // row 0 holds the NaN
  EXPECT_EQ(r.output.shape(), (Shape{2, 9, 8}));
}

TEST(ScaledDotProductAttention, ThreadSafe) {
  const Tensor q = cvattn::test::random_tensor({2, 4, 23, 16}, 1);
  const Tensor k = cvattn::test::random_tensor({2, 4, 31, 16}, 2);
  const Tensor v = cvattn::test::random_tensor({2, 4, 31, 12}, 3);
  const auto serial = F::scaled_dot_product_attention(q, k, v);
  std::vector<std::thread> threads;
  std::vector<F::AttentionResult> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] { results[t] = F::scaled_dot_product_attention(q, k, v); });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_TENSOR_NEAR(r.output, serial.output, (Tolerance{0, 0}));
}

TEST(ScaledDotProductAttention, RejectsBadInput) {
  const Tensor q = Tensor::zeros({2, 3, 5, 8}), k = Tensor::zeros({2, 3, 7, 8});
  const Tensor v = Tensor::zeros({2, 3, 7, 6});
  using cvattn::ShapeError;
  using cvattn::ValueError;
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention(q, Tensor::zeros({2, 3, 7, 4}), v);
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "scaled_dot_product_attention: tensor 'key' expected [..., *, 8] (E of 'query' "
                  "[2, 3, 5, 8]), got [2, 3, 7, 4]")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention(q, k, Tensor::zeros({2, 3, 6, 6}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("tensor 'value' expected [..., 7, *] (S of 'key' [2, 3, 7, 8]), got "
                            "[2, 3, 6, 6]")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention(q, Tensor::zeros({4, 3, 7, 8}), v);
              }),
              ThrowsMessage<ShapeError>(HasSubstr("do not broadcast")));
  EXPECT_THAT(
      cvattn::test::Call([&] { (void)F::scaled_dot_product_attention(Tensor::zeros({8}), k, v); }),
      ThrowsMessage<ShapeError>(HasSubstr("tensor 'query' expected [B..., L, E]")));
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::scaled_dot_product_attention(Tensor(), k, v); }),
              ThrowsMessage<ShapeError>(HasSubstr("query")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention(q, k, v, Tensor::zeros({5, 7}),
                                                      F::SdpaOptions().is_causal(true));
              }),
              ThrowsMessage<ValueError>(HasSubstr("is_causal=true cannot be combined")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention(q, k, v, Tensor::zeros({5, 6}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "tensor 'attn_mask' expected a shape that broadcasts to [2, 3, 5, 7], got "
                  "[5, 6]")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention(q, k, v, Tensor::zeros({1, 2, 3, 5, 7}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("broadcasts to")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention(
                    q, k, v, Tensor::full({5, 7}, 2.0f),
                    F::SdpaOptions().mask_type(F::MaskType::boolean));
              }),
              ThrowsMessage<ValueError>(HasSubstr("is boolean and must hold only 0 and 1, got 2")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention(q, k, v, {},
                                                      F::SdpaOptions().scale(std::nan("")));
              }),
              ThrowsMessage<ValueError>(HasSubstr("scale must be finite")));
  EXPECT_THAT(
      cvattn::test::Call([&] {
        (void)F::scaled_dot_product_attention(Tensor::zeros({3, 0}), Tensor::zeros({3, 0}), v);
      }),
      ThrowsMessage<ShapeError>(HasSubstr("positive embedding size")));
}

TEST(ScaledDotProductAttentionHeads, RejectsBadInput) {
  const Tensor q = Tensor::zeros({2, 5, 12}), k = Tensor::zeros({2, 7, 12});
  const Tensor v = Tensor::zeros({2, 7, 9});
  using cvattn::ShapeError;
  EXPECT_THAT(
      cvattn::test::Call([&] { (void)F::scaled_dot_product_attention_heads(q, k, v, 5); }),
      ThrowsMessage<ShapeError>(HasSubstr("expected [B, L, num_heads*E] with num_heads = 5")));
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::scaled_dot_product_attention_heads(q, k, v, 2); }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'value' expected [B, S, num_heads*Ev]")));
  EXPECT_THAT(cvattn::test::Call([&] {
                (void)F::scaled_dot_product_attention_heads(q, Tensor::zeros({2, 7, 6}), v, 3);
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'key' expected shape [2, *, 12]")));
  EXPECT_THAT(cvattn::test::Call([&] { (void)F::scaled_dot_product_attention_heads(q, k, v, 0); }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("num_heads must be positive")));
  EXPECT_THAT(
      cvattn::test::Call([&] {
        (void)F::scaled_dot_product_attention_heads(q, k, v, 3, Tensor::zeros({2, 2, 5, 7}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("broadcasts to [2, 3, 5, 7]")));
}

TEST(ParseMaskType, Words) {
  EXPECT_EQ(F::parse_mask_type("additive"), F::MaskType::additive);
  EXPECT_EQ(F::parse_mask_type("float"), F::MaskType::additive);
  EXPECT_EQ(F::parse_mask_type("bool"), F::MaskType::boolean);
  EXPECT_EQ(F::parse_mask_type("boolean"), F::MaskType::boolean);
  EXPECT_THAT(cvattn::test::Call([] { (void)F::parse_mask_type("binary"); }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("unknown mask type 'binary'")));
}

TEST(FlattenSpatial, MatchesPyTorchAndRoundTrips) {
  const auto fx = cvattn::test::fixture("attention/flatten");
  const Tensor x = fx.tensor("input");
  const Tensor t = F::flatten_spatial(x);
  EXPECT_TENSOR_NEAR(t, fx.tensor("output"), (Tolerance{0, 0}));
  EXPECT_TENSOR_NEAR(F::unflatten_spatial(t, 4, 5), x, (Tolerance{0, 0}));
}

TEST(FlattenSpatial, MatchesIndexingOnBlockedAndOddSizes) {
  for (const cvattn::Shape& shape : {cvattn::Shape{2, 19, 5, 7}, cvattn::Shape{1, 16, 4, 6},
                                     cvattn::Shape{3, 9, 1, 1}, cvattn::Shape{1, 0, 2, 2}}) {
    const Tensor x = cvattn::test::random_tensor(shape, 7);
    const auto [n, c, h, w] = x.nchw();
    const Tensor t = F::flatten_spatial(x);
    ASSERT_EQ(t.shape(), (Shape{n, h * w, c}));
    for (std::int64_t b = 0; b < n; ++b) {
      for (std::int64_t ch = 0; ch < c; ++ch) {
        for (std::int64_t p = 0; p < h * w; ++p) {
          ASSERT_EQ(t[(b * h * w + p) * c + ch], x[(b * c + ch) * h * w + p]);
        }
      }
    }
    EXPECT_TENSOR_NEAR(F::unflatten_spatial(t, h, w), x, (Tolerance{0, 0}));
  }
}

TEST(FlattenSpatial, RejectsBadShapes) {
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::flatten_spatial(Tensor::zeros({2, 3, 4}));
              }),
              ThrowsMessage<cvattn::ShapeError>(HasSubstr("x")));
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::unflatten_spatial(Tensor::zeros({2, 12, 3}), 4, 4);
              }),
              ThrowsMessage<cvattn::ShapeError>(HasSubstr(
                  "unflatten_spatial: tensor 'tokens' expected [*, 16 (4*4), *], got [2, 12, 3]")));
  EXPECT_THAT(cvattn::test::Call([] {
                (void)F::unflatten_spatial(Tensor::zeros({2, 12, 3}), -3, -4);
              }),
              ThrowsMessage<cvattn::ValueError>(HasSubstr("non-negative")));
}

// MultiheadAttention against torch.nn.MultiheadAttention(batch_first=True) (docs/modules.md §12),
// fixtures from tests/fixtures/mha.py.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/multihead_attention.hpp"
#include "support/call.hpp"
#include "support/concurrency.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<test::Fixture> cases(const std::string& prefix) {
  return test::fixtures_in("mha", prefix);
}

MultiheadAttention loaded(const test::Fixture& fx) {
  const StateDict w = fx.weights();
  MultiheadAttention m(
      MultiheadAttentionOptions::from_state_dict(w, fx.params()["num_heads"].get<std::int64_t>())
          .add_zero_attn(fx.name().find("zero_attn") != std::string::npos));
  m.load_state_dict(w);  // strict: every key and shape as PyTorch saved them
  return m;
}

F::MaskType mask_type(const test::Fixture& fx, const char* key) {
  return F::parse_mask_type(fx.params()[key].get<std::string>());
}

MultiheadAttentionCall call_of(const test::Fixture& fx) {
  MultiheadAttentionCall call;
  call.average_attn_weights(fx.params().value("average_attn_weights", true));
  if (fx.has("attn_mask")) {
    call.attn_mask(fx.tensor("attn_mask")).attn_mask_type(mask_type(fx, "attn_mask_type"));
  }
  if (fx.has("key_padding_mask")) {
    call.key_padding_mask(fx.tensor("key_padding_mask"))
        .key_padding_mask_type(mask_type(fx, "key_padding_mask_type"));
  }
  return call;
}

MultiheadAttention random_mha(const MultiheadAttentionOptions& o, std::uint64_t seed) {
  MultiheadAttention m(o);
  StateDict filled;
  const StateDict current = m.state_dict();
  for (const auto& e : current.entries()) {
    filled.set(e.key, test::random_tensor(e.value.shape(), seed++));
  }
  m.load_state_dict(filled);
  return m;
}

TEST(MultiheadAttention, FixturesCoverTheOptionSpace) {
  EXPECT_GE(cases("mha_").size(), 23u);
  EXPECT_EQ(cases("maps_").size(), 2u);
}

TEST(MultiheadAttention, MatchesPyTorch) {
  for (const auto& fx : cases("mha_")) {
    SCOPED_TRACE(fx.name());
    const MultiheadAttention m = loaded(fx);
    const auto r = m.forward(fx.tensor("query"), fx.tensor("key"), fx.tensor("value"), call_of(fx));
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), test::Tolerance{});
  }
}

TEST(MultiheadAttention, WithoutWeightsGivesTheSameOutput) {
  for (const auto& fx : cases("mha_")) {
    SCOPED_TRACE(fx.name());
    const MultiheadAttention m = loaded(fx);
    const auto r = m.forward(fx.tensor("query"), fx.tensor("key"), fx.tensor("value"),
                             call_of(fx).need_weights(false));
    EXPECT_FALSE(r.attn_weights.defined());
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
  }
}

// One tensor as query, key and value takes the single packed in-projection
// (F::scaled_dot_product_attention_qkv), as PyTorch does when query is key is value.
TEST(MultiheadAttention, OneTensorForQueryKeyValueMatchesPyTorch) {
  int self_cases = 0;
  for (const auto& fx : cases("mha_")) {
    if (!fx.params().value("self_attention", false)) continue;
    SCOPED_TRACE(fx.name());
    ++self_cases;
    const MultiheadAttention m = loaded(fx);
    const Tensor x = fx.tensor("query");
    const auto r = m.forward(x, x, x, call_of(fx));
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.attn_weights, fx.tensor("attn_weights"), test::Tolerance{});
    const auto o = m.forward(x, x, x, call_of(fx).need_weights(false));
    EXPECT_FALSE(o.attn_weights.defined());
    EXPECT_TENSOR_NEAR(o.output, fx.tensor("output"), test::Tolerance{});
  }
  EXPECT_GE(self_cases, 3);
}

TEST(MultiheadAttention, OptionsFromStateDict) {
  const auto kv =
      MultiheadAttentionOptions::from_state_dict(test::fixture("mha/mha_kvdim").weights(), 2);
  EXPECT_EQ(kv.embed_dim(), 8);
  EXPECT_EQ(kv.key_dim(), 5);
  EXPECT_EQ(kv.value_dim(), 3);
  EXPECT_FALSE(kv.packed());
  EXPECT_TRUE(kv.bias());
  const auto nb =
      MultiheadAttentionOptions::from_state_dict(test::fixture("mha/mha_no_bias").weights(), 4);
  EXPECT_TRUE(nb.packed());
  EXPECT_FALSE(nb.bias());
  EXPECT_FALSE(nb.add_bias_kv());
  EXPECT_TRUE(
      MultiheadAttentionOptions::from_state_dict(test::fixture("mha/mha_bias_kv").weights(), 2)
          .add_bias_kv());
  const MultiheadAttention m(MultiheadAttentionOptions(16, 4));
  EXPECT_EQ(m.describe(),
            "MultiheadAttention(embed_dim=16, num_heads=4, bias=True, add_bias_kv=False, "
            "add_zero_attn=False, kdim=16, vdim=16, batch_first=True)");
  std::vector<std::string> keys;
  const StateDict current = m.state_dict();
  for (const auto& e : current.entries()) keys.push_back(e.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight",
                                            "out_proj.bias"}));
}

TEST(MultiheadAttention, SelfAndCrossAttentionBetweenFeatureMaps) {
  const auto self = test::fixture("mha/maps_self");
  const MultiheadAttention m = loaded(self);
  const auto rs = m.forward_maps(self.tensor("input"));
  EXPECT_TENSOR_NEAR(rs.output, self.tensor("output"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(rs.attn_weights, self.tensor("attn_weights"), test::Tolerance{});
  const auto cross = test::fixture("mha/maps_cross");
  const auto rc = m.forward_maps(cross.tensor("input"), cross.tensor("context"));
  EXPECT_TENSOR_NEAR(rc.output, cross.tensor("output"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(rc.attn_weights, cross.tensor("attn_weights"), test::Tolerance{});
}

TEST(MultiheadAttention, AveragedWeightsAreTheMeanOfThePerHeadWeights) {
  const MultiheadAttention m = random_mha(MultiheadAttentionOptions(12, 3), 10);
  const Tensor q = test::random_tensor({2, 5, 12}, 1), k = test::random_tensor({2, 9, 12}, 2);
  const auto avg = m.forward(q, k, k);
  const auto per = m.forward(q, k, k, MultiheadAttentionCall().average_attn_weights(false));
  ASSERT_EQ(per.attn_weights.shape(), (Shape{2, 3, 5, 9}));
  ASSERT_EQ(avg.attn_weights.shape(), (Shape{2, 5, 9}));
  for (std::int64_t b = 0; b < 2; ++b) {
    for (std::int64_t i = 0; i < 5 * 9; ++i) {
      float s = 0;
      for (std::int64_t h = 0; h < 3; ++h) s += per.attn_weights[(b * 3 + h) * 45 + i];
      EXPECT_NEAR(avg.attn_weights[b * 45 + i], s / 3, 1e-6);
    }
  }
  // Rows of the weights sum to 1.
  for (std::int64_t r = 0; r < 2 * 5; ++r) {
    float s = 0;
    for (std::int64_t j = 0; j < 9; ++j) s += avg.attn_weights[r * 9 + j];
    EXPECT_NEAR(s, 1.0f, 1e-5);
  }
}

TEST(MultiheadAttention, AveragedWeightsOverRowBlocksAndThreads) {
  // One batch entry with more query rows than one block, so the head average is made by
  // several tasks (row blocks), with a per-head mask and padding: the same on 1 and 2 threads
  // and equal to the mean of the per-head weights.
  const MultiheadAttention m = random_mha(MultiheadAttentionOptions(20, 4), 7);
  const Tensor q = test::random_tensor({1, 101, 20}, 1), k = test::random_tensor({1, 37, 20}, 2);
  const Tensor mask = test::random_tensor({4, 101, 37}, 3, -2, 2);
  Tensor pad = Tensor::zeros({1, 37});
  pad[5] = 1.0f;
  const auto call = MultiheadAttentionCall()
                        .attn_mask(mask)
                        .attn_mask_type(F::MaskType::additive)
                        .key_padding_mask(pad);
  test::expect_same_on_one_and_two_threads([&] {
    const auto r = m.forward(q, k, k, call);
    return std::vector<Tensor>{r.output, r.attn_weights};
  });
  const auto avg = m.forward(q, k, k, call);
  const auto per = m.forward(q, k, k, MultiheadAttentionCall(call).average_attn_weights(false));
  ASSERT_EQ(avg.attn_weights.shape(), (Shape{1, 101, 37}));
  for (std::int64_t i = 0; i < 101 * 37; ++i) {
    float s = 0;
    for (std::int64_t h = 0; h < 4; ++h) s += per.attn_weights[h * 101 * 37 + i];
    EXPECT_NEAR(avg.attn_weights[i], s / 4, 1e-6);
  }
  EXPECT_TENSOR_NEAR(avg.output, per.output, test::Tolerance{});
}

TEST(MultiheadAttention, FullyMaskedRowGivesZeroWeights) {
  const MultiheadAttention m = random_mha(MultiheadAttentionOptions(8, 2), 3);
  const Tensor q = test::random_tensor({1, 3, 8}, 1), k = test::random_tensor({1, 4, 8}, 2);
  Tensor mask = Tensor::zeros({3, 4});
  for (int j = 0; j < 4; ++j) mask[1 * 4 + j] = 1.0f;  // query 1 may attend nothing
  const auto r = m.forward(q, k, k, MultiheadAttentionCall().attn_mask(mask));
  for (int j = 0; j < 4; ++j) EXPECT_EQ(r.attn_weights[4 + j], 0.0f);
  // Its output is out_proj's bias alone.
  const Tensor bias = m.state_dict().at("out_proj.bias");
  for (int c = 0; c < 8; ++c) EXPECT_NEAR(r.output[8 + c], bias[c], 1e-6);
}

TEST(MultiheadAttention, EmptySequencesAreValid) {
  const MultiheadAttention m = random_mha(MultiheadAttentionOptions(8, 2), 5);
  // No keys: every attention output is 0, so the output is out_proj's bias.
  const auto r = m.forward(test::random_tensor({2, 3, 8}, 1), Tensor::zeros({2, 0, 8}),
                           Tensor::zeros({2, 0, 8}));
  ASSERT_EQ(r.output.shape(), (Shape{2, 3, 8}));
  ASSERT_EQ(r.attn_weights.shape(), (Shape{2, 3, 0}));
  const Tensor bias = m.state_dict().at("out_proj.bias");
  for (std::int64_t i = 0; i < r.output.numel(); ++i) EXPECT_NEAR(r.output[i], bias[i % 8], 1e-6);
  // No queries.
  const auto e = m.forward(Tensor::zeros({2, 0, 8}), test::random_tensor({2, 4, 8}, 2),
                           test::random_tensor({2, 4, 8}, 3));
  EXPECT_EQ(e.output.shape(), (Shape{2, 0, 8}));
  EXPECT_EQ(e.attn_weights.shape(), (Shape{2, 0, 4}));
}

TEST(MultiheadAttention, RejectsBadShapesAndMasks) {
  const MultiheadAttention m(MultiheadAttentionOptions(16, 4));
  const Tensor q = Tensor::zeros({2, 5, 16}), k = Tensor::zeros({2, 7, 16});
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({2, 5, 12}), k, k);
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "MultiheadAttention::forward: tensor 'query' expected shape [2, 5, 16]")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(q, Tensor::zeros({3, 7, 16}), k);
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'key' expected shape [2, 7, 16]")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(q, k, Tensor::zeros({2, 6, 16}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'value' expected shape [2, 7, 16]")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(q, Tensor::zeros({7, 16}), k);
              }),
              ThrowsMessage<ShapeError>(HasSubstr("expected the rank of 'query'")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(q, k, k, MultiheadAttentionCall().attn_mask(Tensor::zeros({5, 6})));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'attn_mask' expected shape [5, 7]")));
  EXPECT_THAT(
      test::Call([&] {
        (void)m.forward(q, k, k, MultiheadAttentionCall().attn_mask(Tensor::zeros({4, 5, 7})));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("tensor 'attn_mask' expected shape [8, 5, 7]")));
  EXPECT_THAT(
      test::Call([&] {
        (void)m.forward(q, k, k, MultiheadAttentionCall().key_padding_mask(Tensor::zeros({2, 5})));
      }),
      ThrowsMessage<ShapeError>(HasSubstr("tensor 'key_padding_mask' expected shape [2, 7]")));
  EXPECT_THAT(
      test::Call([&] {
        (void)m.forward(q, k, k, MultiheadAttentionCall().attn_mask(Tensor::full({5, 7}, 0.5f)));
      }),
      ThrowsMessage<ValueError>(HasSubstr("'attn_mask' is boolean and must hold only 0 and 1")));
  EXPECT_THAT(test::Call([] { MultiheadAttention bad(MultiheadAttentionOptions(10, 4)); }),
              ThrowsMessage<ValueError>(HasSubstr("num_heads (4) must be >= 1 and divide "
                                                  "embed_dim (10)")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward_maps(Tensor::zeros({1, 8, 3, 3}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("tensor 'x' expected shape [*, 16, *, *]")));
}

TEST(MultiheadAttention, LoadRejectsMissingAndMisshapenKeys) {
  const auto fx = test::fixture("mha/mha_h4_self");
  StateDict w = fx.weights();
  w.erase("in_proj_bias");
  MultiheadAttention m(MultiheadAttentionOptions(16, 4));
  EXPECT_THAT(test::Call([&] { m.load_state_dict(w); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'in_proj_bias'")));
  EXPECT_THAT(test::Call([&] { (void)MultiheadAttentionOptions::from_state_dict(StateDict(), 2); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'out_proj.weight'")));
}

TEST(MultiheadAttention, ForwardIsThreadSafe) {
  const auto fx = test::fixture("mha/mha_mask_bool_and_padding");
  const MultiheadAttention m = loaded(fx);
  const Tensor q = fx.tensor("query"), k = fx.tensor("key");
  const auto call = call_of(fx);
  test::expect_thread_safe([&] {
    const auto r = m.forward(q, k, k, call);
    return std::vector<Tensor>{r.output, r.attn_weights};
  });
}

}  // namespace
}  // namespace cvattn

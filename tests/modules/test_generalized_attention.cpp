#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/modules/generalized_attention.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<test::Fixture> cases() { return test::fixtures_in("spatial", "ga_"); }

GeneralizedAttentionOptions options_for(const test::Fixture& fx) {
  const auto& p = fx.params();
  return GeneralizedAttentionOptions::from_state_dict(fx.weights())
      .num_heads(p.value("num_heads", std::int64_t{9}))
      .attention_type(p.value("attention_type", std::string("1111")))
      .kv_stride(p.value("kv_stride", std::int64_t{2}))
      .q_stride(p.value("q_stride", std::int64_t{1}))
      .position_magnitude(p.value("position_magnitude", std::int64_t{1}))
      .spatial_range(p.value("spatial_range", std::int64_t{-1}));
}

TEST(GeneralizedAttention, MatchesMmcvReCreation) {
  const auto all = cases();
  ASSERT_GE(all.size(), 14u);
  for (const auto& fx : all) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const GeneralizedAttentionOptions o = options_for(fx);
    EXPECT_EQ(o.in_channels(), p["in_channels"].get<std::int64_t>());
    if (p.contains("position_embedding_dim")) {
      EXPECT_EQ(o.position_embedding_dim(), p["position_embedding_dim"].get<std::int64_t>());
    }
    GeneralizedAttention m(o);
    m.load_state_dict(fx.weights());
    const Tensor x = fx.tensor("input");
    const Attended r = m.forward_with_maps(x);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), fx.tensor("attention"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(m.forward(x), r.output, test::Tolerance{});
    // The library's GEMMs may round differently when split over threads.
    for (int threads : {1, 2}) {
      const test::ThreadScope scope(threads);
      EXPECT_TENSOR_NEAR(m.forward(x), fx.tensor("output"), test::Tolerance{});
    }
  }
}

TEST(GeneralizedAttention, PositionEmbeddingIsSinCosOfScaledOffsets) {
  // feat_dim 8: frequencies 1000^0 and 1000^(1/2); query 1 (stride 1) vs key 1 (stride 2):
  // d = 1 - 2 = -1.
  const Tensor e = functional::generalized_position_embedding(2, 2, 1, 2, 1, 8);
  ASSERT_EQ(e.shape(), (Shape{2, 2, 4}));
  const float* row = e.data() + (1 * 2 + 1) * 4;
  EXPECT_NEAR(row[0], std::sin(-1.0), 1e-6);
  EXPECT_NEAR(row[1], std::sin(-1.0 / std::sqrt(1000.0)), 1e-6);
  EXPECT_NEAR(row[2], std::cos(-1.0), 1e-6);
  EXPECT_NEAR(row[3], std::cos(-1.0 / std::sqrt(1000.0)), 1e-6);
}

TEST(GeneralizedAttention, Mode0100RejectsNonSquareMaps) {
  // mmcv's '0100' branch cannot run when H != W (mmdetection#8179); cvattn says so.
  const auto fx = test::fixture("spatial/ga_n1_c12_6x6_0100_square");
  GeneralizedAttention m(options_for(fx));
  m.load_state_dict(fx.weights());
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 12, 5, 7}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("mmdetection#8179")));
  // The full '1111' branch has no such restriction (covered by the non-square fixtures).
}

TEST(GeneralizedAttention, RejectsBadSettingsAndWeights) {
  EXPECT_THAT(test::Call([] {
                (void)GeneralizedAttentionOptions(12).attention_type("11x1").functional_options();
              }),
              ThrowsMessage<ValueError>(HasSubstr("four characters 0 or 1")));
  EXPECT_THAT(test::Call([] { (void)GeneralizedAttentionOptions(18).functional_options(); }),
              ThrowsMessage<ValueError>(HasSubstr("multiple of 4")));
  EXPECT_THAT(
      test::Call([] { (void)GeneralizedAttentionOptions(12).num_heads(13).functional_options(); }),
      ThrowsMessage<ValueError>(HasSubstr("num_heads must be in [1, in_channels 12]")));
  const auto fx = test::fixture("spatial/ga_n2_c12_5x7_1000_h3");
  // '1000' weights have no position or bias tensors: loading them as '1111' names the missing.
  GeneralizedAttention wrong(GeneralizedAttentionOptions::from_state_dict(fx.weights())
                                 .num_heads(3)
                                 .position_embedding_dim(8));
  EXPECT_THAT(test::Call([&] { wrong.load_state_dict(fx.weights()); }),
              ThrowsMessage<ValueError>(HasSubstr("appr_bias")));
  GeneralizedAttention m(GeneralizedAttentionOptions::from_state_dict(fx.weights())
                             .num_heads(3)
                             .attention_type("1000"));
  m.load_state_dict(fx.weights());
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 8, 5, 7}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("GeneralizedAttention::forward")));
  // 256 channels: mmcv's map covers 84 x 84 queries only.
  GeneralizedAttention big(
      GeneralizedAttentionOptions(256).num_heads(8).spatial_range(2).attention_type("1000"));
  EXPECT_THAT(test::Call([&] {
                (void)big.forward(Tensor::zeros({1, 256, 85, 2}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("covers 84 x 84 queries")));
}

}  // namespace
}  // namespace cvattn

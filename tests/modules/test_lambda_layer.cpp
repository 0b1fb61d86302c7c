#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/modules/lambda_layer.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<test::Fixture> cases() { return test::fixtures_in("spatial", "lambda_"); }

TEST(LambdaLayer, MatchesTimm) {
  const auto all = cases();
  ASSERT_GE(all.size(), 5u);
  for (const auto& fx : all) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const LambdaLayerOptions o =
        LambdaLayerOptions::from_state_dict(fx.weights()).stride(p["stride"].get<std::int64_t>());
    EXPECT_EQ(o.r(), p["r"].get<std::int64_t>());
    EXPECT_EQ(o.num_heads(), p["num_heads"].get<std::int64_t>());
    EXPECT_EQ(o.dim_head(), p["dim_head"].get<std::int64_t>());
    EXPECT_EQ(o.qkv_bias(), p.value("qkv_bias", false));
    if (o.r() == 0) {
      EXPECT_EQ(o.feat_size(), Pair2(p["feat_size"][0].get<std::int64_t>(),
                                     p["feat_size"][1].get<std::int64_t>()));
    }
    LambdaLayer m(o);
    m.load_state_dict(fx.weights());
    const Tensor x = fx.tensor("input");
    EXPECT_TENSOR_NEAR(m.forward(x), fx.tensor("output"), test::Tolerance{});
    EXPECT_TRUE(m.forward_with_maps(x).maps.items().empty());
    for (int threads : {1, 2}) {
      const test::ThreadScope scope(threads);
      EXPECT_TENSOR_NEAR(m.forward(x), fx.tensor("output"), test::Tolerance{});
    }
  }
}

TEST(LambdaLayer, RejectsBadSettingsAndWeights) {
  EXPECT_THAT(test::Call([] { (void)LambdaLayerOptions(16).r(4).dims(); }),
              ThrowsMessage<ValueError>(HasSubstr("r must be odd")));
  EXPECT_THAT(test::Call([] { (void)LambdaLayerOptions(16).r(0).dims(); }),
              ThrowsMessage<ValueError>(HasSubstr("feat_size is required")));
  EXPECT_THAT(test::Call([] { (void)LambdaLayerOptions(16).dim_out(8).dims(); }),
              ThrowsMessage<ValueError>(HasSubstr("must equal dim")));
  const auto fx = test::fixture("spatial/lambda_n2_c8_4x6_relpos");
  LambdaLayer m(LambdaLayerOptions::from_state_dict(fx.weights()));
  m.load_state_dict(fx.weights());
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 8, 4, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("feat_size (4, 6)")));
  StateDict w = fx.weights();
  w.erase("pos_emb");
  EXPECT_THAT(test::Call([&] { (void)LambdaLayerOptions::from_state_dict(w); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'conv_lambda.weight'")));
  StateDict w2 = fx.weights();
  w2.set("norm_v.running_mean", Tensor::zeros({3}));
  EXPECT_THAT(test::Call([&] { (void)LambdaLayerOptions::from_state_dict(w2); }),
              ThrowsMessage<ValueError>(HasSubstr("do not fit heads*K + K + V")));
}

}  // namespace
}  // namespace cvattn

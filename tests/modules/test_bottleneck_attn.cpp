#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/modules/bottleneck_attn.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<test::Fixture> cases() { return test::fixtures_in("spatial", "bot_"); }

BottleneckAttnOptions options_for(const test::Fixture& fx) {
  const auto& p = fx.params();
  return BottleneckAttnOptions::from_state_dict(fx.weights())
      .num_heads(p["num_heads"].get<std::int64_t>())
      .stride(p["stride"].get<std::int64_t>())
      .scale_pos_embed(p.value("scale_pos_embed", false));
}

TEST(BottleneckAttn, MatchesTimm) {
  const auto all = cases();
  ASSERT_GE(all.size(), 4u);
  for (const auto& fx : all) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const BottleneckAttnOptions o = options_for(fx);
    BottleneckAttn m(o);
    EXPECT_EQ(m.dims().dim_out, p["dim_out"].get<std::int64_t>());
    EXPECT_EQ(m.dims().dim_head_qk, p["dim_head"].get<std::int64_t>());
    EXPECT_EQ(o.feat_size().h, p["feat_size"][0].get<std::int64_t>());
    EXPECT_EQ(o.feat_size().w, p["feat_size"][1].get<std::int64_t>());
    EXPECT_EQ(o.qkv_bias(), p.value("qkv_bias", false));
    m.load_state_dict(fx.weights());
    const Tensor x = fx.tensor("input");
    const Attended r = m.forward_with_maps(x);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), fx.tensor("attention"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(m.forward(x), r.output, test::Tolerance{});
    test::expect_same_on_one_and_two_threads([&] { return m.forward(x); });
  }
}

TEST(BottleneckAttn, OptionsFromTimmArguments) {
  // dim 16, 4 heads: Dqk = make_divisible(16) / 4 = 4; qk_ratio 0.5 -> make_divisible(8) / 2.
  EXPECT_EQ(BottleneckAttnOptions(16, Pair2(5, 7)).dims().dim_head_qk, 4);
  EXPECT_EQ(BottleneckAttnOptions(16, 3).num_heads(2).qk_ratio(0.5).dims().dim_head_qk, 4);
  EXPECT_EQ(BottleneckAttnOptions(8, 3).dim_out(12).num_heads(2).dims().dim_head_v, 6);
}

TEST(BottleneckAttn, RejectsBadSettingsAndWeights) {
  EXPECT_THAT(test::Call([] { (void)BottleneckAttnOptions(16, 4).num_heads(3).dims(); }),
              ThrowsMessage<ValueError>(HasSubstr("multiple of num_heads")));
  EXPECT_THAT(test::Call([] { (void)BottleneckAttnOptions(16, 4).stride(3).dims(); }),
              ThrowsMessage<ValueError>(HasSubstr("stride must be 1 or 2")));
  const auto fx = test::fixture("spatial/bot_n2_c16_5x7_h4");
  // 5 heads cannot split the 48 qkv channels with Dqk 4 into q, k and a v divisible by 5.
  EXPECT_THAT(test::Call([&] {
                (void)BottleneckAttnOptions::from_state_dict(fx.weights()).num_heads(5).dims();
              }),
              ThrowsMessage<ValueError>(HasSubstr("qkv.weight has 48 output channels")));
  StateDict w = fx.weights();
  w.erase("pos_embed.width_rel");
  EXPECT_THAT(test::Call([&] { (void)BottleneckAttnOptions::from_state_dict(w); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'pos_embed.width_rel'")));
  StateDict prefixed;
  const StateDict plain = fx.weights();
  for (const auto& e : plain.entries()) prefixed.set("layer.attn." + e.key, e.value);
  EXPECT_EQ(BottleneckAttnOptions::from_state_dict(prefixed, "layer.attn").feat_size(),
            Pair2(5, 7));
  BottleneckAttn m(BottleneckAttnOptions::from_state_dict(fx.weights()));
  m.load_state_dict(fx.weights());
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 16, 5, 6}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("BottleneckAttn::forward")));
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 8, 5, 7}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("'x'")));
}

}  // namespace
}  // namespace cvattn

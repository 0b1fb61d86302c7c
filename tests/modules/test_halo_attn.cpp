#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/modules/halo_attn.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

std::vector<test::Fixture> cases() { return test::fixtures_in("spatial", "halo_"); }

HaloAttnOptions options_for(const test::Fixture& fx) {
  const auto& p = fx.params();
  return HaloAttnOptions::from_state_dict(fx.weights())
      .stride(p["stride"].get<std::int64_t>())
      .block_size(p["block_size"].get<std::int64_t>())
      .halo_size(p["halo_size"].get<std::int64_t>())
      .avg_down(p.value("avg_down", false))
      .scale_pos_embed(p.value("scale_pos_embed", false));
}

TEST(HaloAttn, MatchesTimm) {
  const auto all = cases();
  ASSERT_GE(all.size(), 6u);
  for (const auto& fx : all) {
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const HaloAttnOptions o = options_for(fx);
    EXPECT_EQ(o.num_heads(), p["num_heads"].get<std::int64_t>());
    HaloAttn m(o);
    EXPECT_EQ(m.dims().dim_out, p["dim_out"].get<std::int64_t>());
    EXPECT_EQ(m.dims().dim_head_qk, p["dim_head"].get<std::int64_t>());
    EXPECT_EQ(o.qkv_bias(), p.value("qkv_bias", false));
    m.load_state_dict(fx.weights());
    const Tensor x = fx.tensor("input");
    const Attended r = m.forward_with_maps(x);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(r.maps.at(maps::kAttention), fx.tensor("attention"), test::Tolerance{});
    EXPECT_TENSOR_NEAR(m.forward(x), r.output, test::Tolerance{});
    // functional::conv2d's 1x1 GEMM may round differently when split over threads.
    for (int threads : {1, 2}) {
      const test::ThreadScope scope(threads);
      EXPECT_TENSOR_NEAR(m.forward(x), fx.tensor("output"), test::Tolerance{});
    }
  }
}

TEST(HaloAttn, StrideChoosesStridedQueriesOrPooling) {
  const auto even = HaloAttnOptions(16).num_heads(2).block_size(4).stride(2).dims();
  EXPECT_EQ(even.block_stride, 2);
  EXPECT_EQ(even.block_size_ds, 2);
  EXPECT_FALSE(even.avg_pool);
  const auto odd = HaloAttnOptions(16).num_heads(2).block_size(3).stride(2).dims();
  EXPECT_EQ(odd.block_stride, 1);
  EXPECT_TRUE(odd.avg_pool);
  EXPECT_TRUE(
      HaloAttnOptions(16).num_heads(2).block_size(4).stride(2).avg_down(true).dims().avg_pool);
  EXPECT_EQ(HaloAttnOptions(16).num_heads(2).block_size(4).halo_size(1).dims().win_size, 6);
}

TEST(HaloAttn, RejectsBadSettingsAndWeights) {
  EXPECT_THAT(test::Call([] { (void)HaloAttnOptions(16).num_heads(3).dims(); }),
              ThrowsMessage<ValueError>(HasSubstr("multiple of num_heads")));
  EXPECT_THAT(test::Call([] { (void)HaloAttnOptions(16).num_heads(2).stride(4).dims(); }),
              ThrowsMessage<ValueError>(HasSubstr("stride must be 1 or 2")));
  const auto fx = test::fixture("spatial/halo_n2_c16_8x12_b4_h1");
  StateDict w = fx.weights();
  // Weights made for a 6x6 window (block 4, halo 1) do not load into block 4, halo 2.
  HaloAttn wrong(HaloAttnOptions::from_state_dict(w).block_size(4).halo_size(2));
  EXPECT_THAT(test::Call([&] { wrong.load_state_dict(w); }),
              ThrowsMessage<ValueError>(HasSubstr("pos_embed.height_rel")));
  HaloAttn m(HaloAttnOptions::from_state_dict(w).block_size(4).halo_size(1));
  m.load_state_dict(w);
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 16, 8, 10}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("multiples of block_size 4")));
  w.erase("kv.weight");
  EXPECT_THAT(test::Call([&] { (void)HaloAttnOptions::from_state_dict(w); }),
              ThrowsMessage<ValueError>(HasSubstr("missing 'kv.weight'")));
}

}  // namespace
}  // namespace cvattn

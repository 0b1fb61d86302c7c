#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/bilinear_attention.hpp"
#include "cvattn/modules/bat.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"
#include "support/threads.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(BatNonLocalAttn, MatchesTimm) {
  int count = 0;
  for (const auto& fx : test::fixtures_in("spatial", "bat_")) {
    ++count;
    SCOPED_TRACE(fx.name());
    const auto& p = fx.params();
    const BatNonLocalAttnOptions o = BatNonLocalAttnOptions::from_state_dict(fx.weights());
    EXPECT_EQ(o.block_size(), p["block_size"].get<std::int64_t>());
    EXPECT_EQ(o.groups(), p["groups"].get<std::int64_t>());
    EXPECT_EQ(o.reduced_channels(), p["rd_channels"].get<std::int64_t>());
    BatNonLocalAttn m(o);
    m.load_state_dict(fx.weights());
    const Tensor x = fx.tensor("input");
    const Attended r = m.forward_with_maps(x);
    EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
    const Tensor& pm = r.maps.at(maps::kAttentionP);
    ASSERT_EQ(pm.shape(), (Shape{x.dim(0), o.groups(), o.block_size(), o.block_size()}));
    // Rows of p sum to 1.
    for (std::int64_t i = 0; i < pm.numel() / o.block_size(); ++i) {
      float sum = 0.0f;
      for (std::int64_t j = 0; j < o.block_size(); ++j) sum += pm[i * o.block_size() + j];
      EXPECT_NEAR(sum, 1.0f, 1e-5f);
    }
    for (int threads : {1, 2}) {
      const test::ThreadScope scope(threads);
      EXPECT_TENSOR_NEAR(m.forward(x), fx.tensor("output"), test::Tolerance{});
    }
  }
  EXPECT_GE(count, 4);
}

TEST(BatNonLocalAttn, TransformIsKroneckerExpanded) {
  // b = 2, th = tw = 2 on a 4x4 plane: p swaps the block rows, q is the identity.
  Tensor x = Tensor::zeros({1, 1, 4, 4});
  for (std::int64_t i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  const Tensor p = Tensor::from_vector({1, 1, 2, 2}, {0, 1, 1, 0});
  const Tensor q = Tensor::from_vector({1, 1, 2, 2}, {1, 0, 0, 1});
  const Tensor y = functional::bilinear_attn_transform(x, p, q);
  // Row i*2 + a takes row (1 - i)*2 + a.
  for (std::int64_t col = 0; col < 4; ++col) {
    EXPECT_EQ(y[0 * 4 + col], x[2 * 4 + col]);
    EXPECT_EQ(y[3 * 4 + col], x[1 * 4 + col]);
  }
}

TEST(BatNonLocalAttn, RejectsBadWeightsAndInputs) {
  const auto fx = test::fixture("spatial/bat_n2_c16_6x9_b3_g2");
  BatNonLocalAttn m(BatNonLocalAttnOptions::from_state_dict(fx.weights()));
  m.load_state_dict(fx.weights());
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 16, 6, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("multiples of block_size 3")));
  StateDict w = fx.weights();
  w.set("ba.conv_p.weight", Tensor::zeros({10, 2, 3, 1}));
  EXPECT_THAT(test::Call([&] { (void)BatNonLocalAttnOptions::from_state_dict(w); }),
              ThrowsMessage<ValueError>(HasSubstr("ba.conv_p.weight")));
  EXPECT_THAT(test::Call([] {
                (void)BatNonLocalAttnOptions(16).rd_channels(6).groups(4).reduced_channels();
              }),
              ThrowsMessage<ValueError>(HasSubstr("multiple of groups 4")));
}

}  // namespace
}  // namespace cvattn

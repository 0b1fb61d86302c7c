// LearnedPositionEncoding: a learned [1, C, H, W] table from a state_dict, added to x.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/position_encoding.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(LearnedPositionEncoding, MatchesPyTorch) {
  const auto cases = test::fixtures_in("learned_pos");
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& fx : cases) {
    SCOPED_TRACE(fx.name());
    const StateDict w = io::load_safetensors(fx.path("weights.safetensors"));
    LearnedPositionEncoding m(LearnedPositionEncodingOptions::from_state_dict(w));
    m.load_state_dict(w);
    EXPECT_TENSOR_NEAR(m.forward(fx.tensor("input")), fx.tensor("output"),
                       (test::Tolerance{1e-6, 1e-6}));
  }
}

TEST(LearnedPositionEncoding, RejectsMismatchedInputAndWeights) {
  const LearnedPositionEncoding m(LearnedPositionEncodingOptions(8, 5, 7));
  EXPECT_EQ(m.describe(), "LearnedPositionEncoding(channels=8, height=5, width=7)");
  EXPECT_THAT(test::Call([&] {
                (void)m.forward(Tensor::zeros({1, 8, 7, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "LearnedPositionEncoding::forward: tensor 'x' expected shape [*, 8, 5, 7]")));
  StateDict w;
  w.set("pos_embed", Tensor::zeros({8, 5, 7}));
  EXPECT_THAT(
      test::Call([&] { (void)LearnedPositionEncodingOptions::from_state_dict(w); }),
      ThrowsMessage<ValueError>(HasSubstr("'pos_embed' expected [1, *, *, *], got [8, 5, 7]")));
  EXPECT_THAT(
      test::Call([] { LearnedPositionEncoding bad(LearnedPositionEncodingOptions(0, 1, 1)); }),
      ThrowsMessage<ValueError>(HasSubstr("must be >= 1")));
}

}  // namespace
}  // namespace cvattn

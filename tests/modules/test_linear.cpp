#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/modules/linear.hpp"
#include "modules/state_dict_fixture.hpp"
#include "support/call.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(LinearModule, MatchesPyTorch) {
  const auto fx = test::fixture("basic_modules/linear");
  const StateDict dict = test::load_weights(fx);
  Linear lin(LinearOptions::from_state_dict(dict));
  lin.load_state_dict(dict);
  EXPECT_TENSOR_NEAR(lin.forward(fx.tensor("input")), fx.tensor("output"),
                     (test::Tolerance{1e-4, 1e-4}));
  EXPECT_EQ(lin.describe(), fx.params()["repr"].get<std::string>());
}

TEST(LinearModule, NoBiasMeansNoBiasKey) {
  Linear lin(LinearOptions(3, 2).bias(false));
  EXPECT_EQ(lin.state_dict().keys(), std::vector<std::string>{"weight"});
  EXPECT_EQ(lin.describe(), "Linear(in_features=3, out_features=2, bias=False)");
  StateDict dict;
  dict.set("fc.weight", Tensor::zeros({2, 3}));
  EXPECT_FALSE(LinearOptions::from_state_dict(dict, "fc").bias());
  EXPECT_EQ(LinearOptions::from_state_dict(dict, "fc").in_features(), 3);
}

TEST(LinearModule, RejectsWrongFeatureCount) {
  const Linear lin(LinearOptions(20, 30));
  EXPECT_THAT(test::Call([&] {
                (void)lin.forward(Tensor::zeros({4, 21}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("Linear::forward: tensor 'x' expected [..., 20], got [4, 21]")));
  StateDict dict;
  dict.set("weight", Tensor::zeros({2, 3, 1}));
  EXPECT_THAT(test::Call([&] { (void)LinearOptions::from_state_dict(dict); }),
              ThrowsMessage<ShapeError>(HasSubstr("'weight' expected [out, in], got [2, 3, 1]")));
}

}  // namespace
}  // namespace cvattn

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "modules/state_dict_fixture.hpp"
#include "support/call.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};

TEST(BatchNorm2dModule, MatchesPyTorch) {
  for (const char* name : {"basic_modules/batch_norm2d", "basic_modules/batch_norm2d_no_affine"}) {
    SCOPED_TRACE(name);
    const auto fx = test::fixture(name);
    const StateDict dict = test::load_weights(fx);
    const auto& p = fx.params();
    auto options = BatchNorm2dOptions::from_state_dict(dict).eps(p["eps"].get<double>());
    EXPECT_EQ(options.num_features(), p["num_features"].get<std::int64_t>());
    EXPECT_EQ(options.affine(), p["affine"].get<bool>());
    BatchNorm2d bn(options);
    bn.load_state_dict(dict);
    EXPECT_TENSOR_NEAR(bn.forward(fx.tensor("input")), fx.tensor("output"), kTol);
  }
}

TEST(BatchNorm2dModule, KeysAndFreshState) {
  const BatchNorm2d bn(BatchNorm2dOptions(3));
  EXPECT_EQ(bn.state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                      "num_batches_tracked"}));
  EXPECT_EQ(bn.describe(), "BatchNorm2d(3, eps=1e-05, affine=True)");
  // A fresh module is the identity up to eps, as in PyTorch.
  const Tensor x = Tensor::full({1, 3, 2, 2}, 2.0f);
  EXPECT_TENSOR_NEAR(bn.forward(x), x, kTol);
  const BatchNorm2d plain(BatchNorm2dOptions(2).affine(false).eps(1e-3));
  EXPECT_EQ(plain.state_dict().keys(),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(plain.describe(), "BatchNorm2d(2, eps=0.001, affine=False)");
}

TEST(BatchNorm2dModule, RejectsWrongShapes) {
  BatchNorm2d bn(BatchNorm2dOptions(2));
  StateDict dict;
  dict.set("weight", Tensor::zeros({2}));
  dict.set("bias", Tensor::zeros({2}));
  dict.set("running_mean", Tensor::zeros({3}));
  dict.set("running_var", Tensor::zeros({2}));
  EXPECT_THAT(test::Call([&] { bn.load_state_dict(dict); }),
              ThrowsMessage<ValueError>(HasSubstr("'running_mean' expected [2], got [3]")));
  EXPECT_THAT(
      test::Call([&] {
        (void)bn.forward(Tensor::zeros({1, 3, 4, 4}));
      }),
      ThrowsMessage<ShapeError>(HasSubstr(
          "BatchNorm2d::forward: tensor 'x' expected shape [*, 2, *, *], got [1, 3, 4, 4]")));
  EXPECT_THAT(test::Call([] { BatchNorm2d(BatchNorm2dOptions(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("num_features must be positive, got 0")));
}

}  // namespace
}  // namespace cvattn

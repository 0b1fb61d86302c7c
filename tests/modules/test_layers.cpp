// The parameter-free modules: activations, pooling, Flatten.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/flatten.hpp"
#include "cvattn/modules/pooling.hpp"
#include "support/call.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kExact{0, 0};

TEST(Layers, ForwardCallsTheKernel) {
  const Tensor x = test::random_tensor({2, 3, 8, 6}, 3, -2.0f, 2.0f);
  EXPECT_TENSOR_NEAR(ReLU().forward(x), F::relu(x), kExact);
  EXPECT_TENSOR_NEAR(Sigmoid().forward(x), F::sigmoid(x), kExact);
  EXPECT_TENSOR_NEAR(Tanh().forward(x), F::tanh(x), kExact);
  const auto mp = F::MaxPool2dOptions(3).stride(2).padding(1);
  EXPECT_TENSOR_NEAR(MaxPool2d(mp).forward(x), F::max_pool2d(x, mp), kExact);
  const auto ap = F::AvgPool2dOptions(2).count_include_pad(false);
  EXPECT_TENSOR_NEAR(AvgPool2d(ap).forward(x), F::avg_pool2d(x, ap), kExact);
  EXPECT_TENSOR_NEAR(AdaptiveAvgPool2d(1).forward(x), F::adaptive_avg_pool2d(x, 1), kExact);
  EXPECT_TENSOR_NEAR(AdaptiveMaxPool2d({3, 2}).forward(x), F::adaptive_max_pool2d(x, {3, 2}),
                     kExact);
}

TEST(Layers, DescribeLikePyTorch) {
  EXPECT_EQ(ReLU().describe(), "ReLU()");
  EXPECT_EQ(Sigmoid().describe(), "Sigmoid()");
  EXPECT_EQ(MaxPool2d(F::MaxPool2dOptions(2)).describe(),
            "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(MaxPool2d(F::MaxPool2dOptions({3, 2}).stride(1).ceil_mode(true)).describe(),
            "MaxPool2d(kernel_size=(3, 2), stride=1, padding=0, dilation=1, ceil_mode=True)");
  EXPECT_EQ(AvgPool2d(F::AvgPool2dOptions(3).stride(2).padding(1)).describe(),
            "AvgPool2d(kernel_size=3, stride=2, padding=1)");
  EXPECT_EQ(AdaptiveAvgPool2d(1).describe(), "AdaptiveAvgPool2d(output_size=1)");
  EXPECT_EQ(AdaptiveMaxPool2d({7, 5}).describe(), "AdaptiveMaxPool2d(output_size=(7, 5))");
  EXPECT_EQ(Flatten().describe(), "Flatten(start_dim=1, end_dim=-1)");
}

TEST(Layers, NoStateDictKeys) {
  EXPECT_TRUE(ReLU().state_dict().empty());
  EXPECT_TRUE(MaxPool2d(F::MaxPool2dOptions(2)).state_dict().empty());
  EXPECT_TRUE(Flatten().state_dict().empty());
}

TEST(Layers, PoolingOptionsCheckedAtConstruction) {
  EXPECT_THAT(test::Call([] { MaxPool2d(F::MaxPool2dOptions(3).padding(2)); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("MaxPool2d: padding (2, 2) must be non-negative and at most half of "
                            "kernel_size (3, 3)")));
  EXPECT_THAT(test::Call([] { AvgPool2d(F::AvgPool2dOptions(2).stride(0)); }),
              ThrowsMessage<ValueError>(HasSubstr("AvgPool2d: stride must be positive")));
  EXPECT_THAT(test::Call([] { AdaptiveAvgPool2d(Pair2(0, 3)); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("AdaptiveAvgPool2d: output_size must be positive, got (0, 3)")));
}

TEST(Flatten, MergesTheRequestedDims) {
  const Tensor x = test::random_tensor({2, 3, 4, 5}, 1);
  EXPECT_EQ(Flatten().forward(x).shape(), (Shape{2, 60}));
  EXPECT_EQ(Flatten(0, 1).forward(x).shape(), (Shape{6, 4, 5}));
  EXPECT_EQ(Flatten(-2, -1).forward(x).shape(), (Shape{2, 3, 20}));
  EXPECT_EQ(Flatten(2, 2).forward(x).shape(), (Shape{2, 3, 4, 5}));
  const Tensor y = Flatten().forward(x);
  EXPECT_NE(y.data(), x.data()) << "Flatten returns a fresh tensor";
  EXPECT_TENSOR_NEAR(y.reshape(x.shape()), x, kExact);
  EXPECT_THAT(test::Call([&] { (void)Flatten(1, 4).forward(x); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "Flatten::forward: start_dim 1 and end_dim 4 out of range for tensor 'x' "
                  "[2, 3, 4, 5]")));
  EXPECT_THAT(test::Call([&] { (void)Flatten(2, 1).forward(x); }),
              ThrowsMessage<ValueError>(HasSubstr("start_dim 2 comes after end_dim 1")));
}

}  // namespace
}  // namespace cvattn

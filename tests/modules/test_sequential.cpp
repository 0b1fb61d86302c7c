#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "cvattn/core/error.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/flatten.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/pooling.hpp"
#include "cvattn/modules/sequential.hpp"
#include "modules/state_dict_fixture.hpp"
#include "support/call.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

constexpr test::Tolerance kTol{1e-4, 1e-4};

// The fixture's network, built as a user would.
Sequential make_cnn() {
  Sequential net;
  net.push_back(std::make_shared<Conv2d>(Conv2dOptions(3, 8, 3).padding(1)));
  net.push_back(std::make_shared<BatchNorm2d>(BatchNorm2dOptions(8)));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(std::make_shared<MaxPool2d>(F::MaxPool2dOptions(2)));
  net.push_back(
      std::make_shared<Conv2d>(Conv2dOptions(8, 16, 3).stride(2).padding(1).groups(2).bias(false)));
  net.push_back(std::make_shared<BatchNorm2d>(BatchNorm2dOptions(16)));
  net.push_back(std::make_shared<ReLU>());
  net.push_back(
      std::make_shared<MaxPool2d>(F::MaxPool2dOptions(3).stride(2).padding(1).ceil_mode(true)));
  net.push_back(std::make_shared<Flatten>());
  net.push_back(std::make_shared<Linear>(LinearOptions(144, 10)));
  return net;
}

TEST(Sequential, MatchesPyTorchFromNpyStateDict) {
  const auto fx = test::fixture("basic_modules/sequential_cnn");
  Sequential net = make_cnn();
  net.load_state_dict(test::state_dict_from_npy(fx));
  EXPECT_TENSOR_NEAR(net.forward(fx.tensor("input")), fx.tensor("output"), kTol);
}

TEST(Sequential, MatchesPyTorchFromWeightsFile) {
#ifdef CVATTN_TEST_HAS_SAFETENSORS
  const auto fx = test::fixture("basic_modules/sequential_cnn");
  Sequential net = make_cnn();
  net.load_state_dict(test::load_weights(fx));
  EXPECT_TENSOR_NEAR(net.forward(fx.tensor("input")), fx.tensor("output"), kTol);
#else
  GTEST_SKIP() << "io/safetensors.hpp not available yet";
#endif
}

TEST(Sequential, KeysFollowPyTorchNumbering) {
  const auto fx = test::fixture("basic_modules/sequential_cnn");
  std::vector<std::string> expected;
  for (const auto& k : fx.params()["keys"]) expected.push_back(k.get<std::string>());
  EXPECT_EQ(make_cnn().state_dict().keys(), expected);
}

TEST(Sequential, PrettyPrintMatchesPyTorchReprOfEachChild) {
  // PyTorch prints "  (i): <repr>" per child; BatchNorm2d omits momentum/track_running_stats.
  const auto fx = test::fixture("basic_modules/sequential_cnn");
  const std::string torch_repr = fx.params()["repr"].get<std::string>();
  const std::string ours = make_cnn().pretty_print();
  for (const char* line :
       {"(0): Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))", "(2): ReLU()",
        "(3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)",
        "(4): Conv2d(8, 16, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), groups=2, "
        "bias=False)",
        "(7): MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=True)",
        "(8): Flatten(start_dim=1, end_dim=-1)",
        "(9): Linear(in_features=144, out_features=10, bias=True)"}) {
    EXPECT_THAT(torch_repr, HasSubstr(line));
    EXPECT_THAT(ours, HasSubstr(line));
  }
  EXPECT_THAT(ours, HasSubstr("(1): BatchNorm2d(8, eps=1e-05, affine=True)"));
}

TEST(Sequential, StrictLoadingReportsEveryProblem) {
  const auto fx = test::fixture("basic_modules/sequential_cnn");
  StateDict dict = test::state_dict_from_npy(fx);
  dict.erase("0.bias");
  dict.set("4.bias", Tensor::zeros({16}));
  dict.set("9.weight", Tensor::zeros({10, 143}));
  Sequential net = make_cnn();
  EXPECT_THAT(test::Call([&] { net.load_state_dict(dict); }),
              ThrowsMessage<ValueError>(
                  AllOf(HasSubstr("missing '0.bias'"), HasSubstr("unexpected '4.bias'"),
                        HasSubstr("'9.weight' expected [10, 144], got [10, 143]"))));
}

TEST(Sequential, AcceptsMissingNumBatchesTracked) {
  const auto fx = test::fixture("basic_modules/sequential_cnn");
  StateDict dict = test::state_dict_from_npy(fx);
  dict.erase("1.num_batches_tracked");
  dict.erase("5.num_batches_tracked");
  Sequential net = make_cnn();
  net.load_state_dict(dict);
  EXPECT_TENSOR_NEAR(net.forward(fx.tensor("input")), fx.tensor("output"), kTol);
}

TEST(Sequential, ForwardIsThreadSafe) {
  const auto fx = test::fixture("basic_modules/sequential_cnn");
  Sequential net = make_cnn();
  net.load_state_dict(test::state_dict_from_npy(fx));
  const Tensor x = fx.tensor("input");
  const Tensor serial = net.forward(x);
  std::vector<Tensor> results(8);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < 5; ++r) results[i] = net.forward(x);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_TENSOR_NEAR(r, serial, (test::Tolerance{0, 0}));
}

TEST(Sequential, EmptyIsIdentityAndAtIsChecked) {
  const Sequential net;
  const Tensor x = Tensor::full({2, 3}, 1.5f);
  EXPECT_TENSOR_NEAR(net.forward(x), x, (test::Tolerance{0, 0}));
  EXPECT_THAT(test::Call([&] { (void)net.at(0); }),
              ThrowsMessage<ValueError>(HasSubstr("Sequential::at: index 0 out of range for 0")));
}

TEST(Sequential, PushBackKeepsTypeAndRejectsNull) {
  Sequential net{std::make_shared<ReLU>()};
  const std::shared_ptr<Conv2d> conv =
      net.push_back(std::make_shared<Conv2d>(Conv2dOptions(1, 1, 1)));
  EXPECT_EQ(net.size(), 2u);
  EXPECT_EQ(net.at(1).get(), conv.get());
  EXPECT_EQ(net.children()[1].first, "1");
  EXPECT_THAT(test::Call([&] { net.push_back(std::shared_ptr<ReLU>()); }),
              ThrowsMessage<ValueError>(HasSubstr("Sequential: module 2 is null")));
}

TEST(Sequential, ShapeErrorsNameTheFailingLayer) {
  const Sequential net = make_cnn();
  EXPECT_THAT(test::Call([&] {
                (void)net.forward(Tensor::zeros({1, 4, 8, 8}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr(
                  "Conv2d::forward: tensor 'x' expected shape [*, 3, *, *], got [1, 4, 8, 8]")));
  // 12x12 input: Flatten gives 16*2*2 = 64 features where Linear wants 144.
  EXPECT_THAT(test::Call([&] {
                (void)net.forward(Tensor::zeros({1, 3, 12, 12}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("Linear::forward: tensor 'x' expected [..., 144], got [1, 64]")));
}

}  // namespace
}  // namespace cvattn

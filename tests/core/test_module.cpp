#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cvattn/core/error.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/io/safetensors.hpp"
#include "support/call.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// A minimal module tree: Block { conv.weight [4,3,2,2], bias [4], bn { running_mean [4], ... } }.
class Leaf final : public Module {
 public:
  Leaf() {
    mean = register_buffer("running_mean", {4});
    register_buffer("num_batches_tracked", {}, /*integer=*/true);
  }
  std::string describe() const override { return "Leaf()"; }
  Tensor mean;
};

class Block final : public Module {
 public:
  Block() {
    weight = register_parameter("conv.weight", {4, 3, 2, 2});
    bias = register_parameter("bias", {4});
    bn = register_module("bn", std::make_shared<Leaf>());
  }
  std::string describe() const override { return "Block(channels=4)"; }
  void on_weights_loaded() override { ++loads; }
  Tensor weight, bias;
  std::shared_ptr<Leaf> bn;
  int loads = 0;
};

TEST(Module, LoadsTorchStateDictByDottedNames) {
  // The io fixture holds torch-written conv.weight [4,3,2,2], bias [4], bn.num_batches_tracked.
  const auto fx = test::fixture("io/safetensors");
  StateDict d = io::load_safetensors(fx.path("weights.safetensors"));
  d.erase("half");
  d.erase("bf16");
  d.erase("double");
  d.set("bn.running_mean", fx.tensor("bias"));
  Block b;
  b.load_state_dict(d);
  EXPECT_TENSOR_NEAR(b.weight, fx.tensor("conv.weight"), (test::Tolerance{0, 0}));
  EXPECT_TENSOR_NEAR(b.bn->mean, fx.tensor("bias"), (test::Tolerance{0, 0}));
  EXPECT_EQ(b.loads, 1);
}

TEST(Module, IntegerBufferIsOptional) {
  Block b;
  StateDict d = b.state_dict();
  d.erase("bn.num_batches_tracked");
  EXPECT_NO_THROW(b.load_state_dict(d));
}

TEST(Module, StrictLoadingReportsEverythingInOneMessage) {
  Block b;
  StateDict d;
  d.set("conv.weight", Tensor::zeros({4, 3, 3, 3}));
  d.set("extra.weight", Tensor::zeros({1}));
  d.set("bn.running_mean", Tensor::zeros({4}), /*integer=*/true);
  EXPECT_THAT(test::Call([&] { b.load_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "load_state_dict(Block(channels=4)): missing 'bias'; unexpected "
                  "'extra.weight'; 'conv.weight' expected [4, 3, 2, 2], got [4, 3, 3, 3], "
                  "'bn.running_mean' expected a floating-point tensor, got an integer one")));
  EXPECT_EQ(b.loads, 0);
}

TEST(Module, NonStrictLoadingIgnoresMissingAndUnexpectedButNotShapes) {
  Block b;
  StateDict d;
  d.set("bias", Tensor::full({4}, 2.0f));
  d.set("other", Tensor::zeros({1}));
  b.load_state_dict(d, Strict::no);
  EXPECT_EQ(b.bias[3], 2.0f);
  d.set("bias", Tensor::zeros({5}));
  EXPECT_THROW(b.load_state_dict(d, Strict::no), ValueError);
}

TEST(Module, StateDictSharesStorageAndNamesParameters) {
  Block b;
  const StateDict d = b.state_dict();
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"conv.weight", "bias", "bn.running_mean",
                                                "bn.num_batches_tracked"}));
  const auto params = b.named_parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[1].first, "bias");
  Tensor w = d.at("bias");
  w[0] = 3.0f;
  EXPECT_EQ(b.bias[0], 3.0f);
}

TEST(Module, PrettyPrintShowsTheTree) {
  Block b;
  EXPECT_EQ(b.pretty_print(), "Block(channels=4)\n  (bn): Leaf()\n");
}

}  // namespace
}  // namespace cvattn

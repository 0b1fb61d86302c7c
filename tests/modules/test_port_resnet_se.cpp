// docs/porting.md's worked example: timm.models.resnet.BasicBlock(attn_layer='se') ported to C++
// as a user would, checked against timm's own block (tests/fixtures/containers.py: resnet_se_*,
// resnet_stage; randomised weights and BatchNorm statistics).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/module.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/sequential.hpp"
#include "cvattn/modules/squeeze_excitation.hpp"
#include "support/call.hpp"
#include "support/concurrency.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::ThrowsMessage;

// ---- the port, as in docs/porting.md ----------------------------------------------------------

// timm's downsample_conv(inplanes, planes, kernel_size=1, stride): Sequential(conv, bn).
std::shared_ptr<Sequential> downsample_conv(std::int64_t in, std::int64_t out,
                                            std::int64_t stride) {
  return std::make_shared<Sequential>(
      Sequential{std::make_shared<Conv2d>(Conv2dOptions(in, out, 1).stride(stride).bias(false)),
                 std::make_shared<BatchNorm2d>(BatchNorm2dOptions(out))});
}

// timm.models.resnet.BasicBlock(inplanes, planes, stride, downsample, attn_layer='se').
class BasicBlock final : public UnaryModule {
 public:
  BasicBlock(std::int64_t inplanes, std::int64_t planes, std::int64_t stride,
             std::shared_ptr<Sequential> downsample = nullptr) {
    // Registered in the order of timm's __init__, so state_dict() lists keys as PyTorch does.
    conv1_ = register_module(
        "conv1", std::make_shared<Conv2d>(
                     Conv2dOptions(inplanes, planes, 3).stride(stride).padding(1).bias(false)));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(BatchNorm2dOptions(planes)));
    act1_ = register_module("act1", std::make_shared<ReLU>());
    conv2_ = register_module(
        "conv2", std::make_shared<Conv2d>(Conv2dOptions(planes, planes, 3).padding(1).bias(false)));
    bn2_ = register_module("bn2", std::make_shared<BatchNorm2d>(BatchNorm2dOptions(planes)));
    // create_attn('se', planes) = SEModule(planes): rd_ratio 1/16, rd_divisor 8 (the defaults).
    se_ = register_module("se",
                          std::make_shared<SqueezeExcitation>(SqueezeExcitationOptions(planes)));
    act2_ = register_module("act2", std::make_shared<ReLU>());
    if (downsample) downsample_ = register_module("downsample", std::move(downsample));
  }

  Tensor forward(const Tensor& x) const override { return run(x, nullptr); }
  Attended forward_with_maps(const Tensor& x) const override {
    Attended r;
    r.output = run(x, &r.maps);
    return r;
  }
  std::string describe() const override { return "BasicBlock"; }

 private:
  // timm's forward line by line; call_child runs hooks, collects maps ("se.attention") and puts
  // the child's name in errors.
  Tensor run(const Tensor& x, AttentionMaps* maps) const {
    Tensor y = call_child("conv1", *conv1_, x, maps);
    y = call_child("bn1", *bn1_, y, maps);
    y = call_child("act1", *act1_, y, maps);
    y = call_child("conv2", *conv2_, y, maps);
    y = call_child("bn2", *bn2_, y, maps);
    y = call_child("se", *se_, y, maps);
    const Tensor shortcut = downsample_ ? call_child("downsample", *downsample_, x, maps) : x;
    CVATTN_CHECK(shortcut.shape() == y.shape(), ShapeError, "BasicBlock: the residual ",
                 to_string(shortcut.shape()), " does not match the block's output ",
                 to_string(y.shape()), " (a downsample is needed)");
    Tensor sum = Tensor::empty(y.shape());  // x += shortcut
    for (std::int64_t i = 0; i < sum.numel(); ++i) sum[i] = y[i] + shortcut[i];
    return call_child("act2", *act2_, sum, maps);
  }

  std::shared_ptr<Conv2d> conv1_, conv2_;
  std::shared_ptr<BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<ReLU> act1_, act2_;
  std::shared_ptr<SqueezeExcitation> se_;
  std::shared_ptr<Sequential> downsample_;
};

std::shared_ptr<BasicBlock> basic_block(std::int64_t inplanes, std::int64_t planes,
                                        std::int64_t stride) {
  std::shared_ptr<Sequential> down;
  if (stride != 1 || inplanes != planes) down = downsample_conv(inplanes, planes, stride);
  return std::make_shared<BasicBlock>(inplanes, planes, stride, down);
}

// nn.Sequential(OrderedDict(stem=Sequential(conv, bn, relu), layer1=Sequential(block, block))).
std::shared_ptr<Sequential> stage() {
  return std::make_shared<Sequential>(Sequential{
      {"stem",
       std::make_shared<Sequential>(Sequential{
           std::make_shared<Conv2d>(Conv2dOptions(3, 8, 3).padding(1).bias(false)),
           std::make_shared<BatchNorm2d>(BatchNorm2dOptions(8)), std::make_shared<ReLU>()})},
      {"layer1",
       std::make_shared<Sequential>(Sequential{basic_block(8, 16, 2), basic_block(16, 16, 1)})}});
}

// ---- the checks ------------------------------------------------------------------------------

// The bar for ported networks: 1e-4 * (1 + max|ref|).
test::Tolerance port_tolerance(const Tensor& ref) {
  float m = 0.0f;
  for (std::int64_t i = 0; i < ref.numel(); ++i) m = std::max(m, std::abs(ref[i]));
  return test::Tolerance{1e-4 * (1.0 + m), 0.0};
}

std::vector<std::string> fixture_keys(const test::Fixture& fx) {
  std::vector<std::string> out;
  for (const auto& k : fx.params()["keys"]) out.push_back(k[0].get<std::string>());
  return out;
}

std::vector<std::string> map_names(const AttentionMaps& maps) {
  std::vector<std::string> out;
  for (const auto& item : maps.items()) out.push_back(item.first);
  return out;
}

TEST(PortResnetSe, BasicBlockMatchesTimm) {
  for (const char* name : {"resnet_se_down", "resnet_se_id"}) {
    SCOPED_TRACE(name);
    const auto fx = test::fixture(std::string("containers/") + name);
    const auto& p = fx.params();
    const auto block =
        basic_block(p["inplanes"].get<std::int64_t>(), p["planes"].get<std::int64_t>(),
                    p["stride"].get<std::int64_t>());
    EXPECT_EQ(block->state_dict().keys(), fixture_keys(fx));  // same keys, same order
    EXPECT_TRUE(block->load_state_dict(fx.weights()).empty());
    const Tensor ref = fx.tensor("output");
    EXPECT_TENSOR_NEAR(block->forward(fx.tensor("input")), ref, port_tolerance(ref));
    const Attended r = block->forward_with_maps(fx.tensor("input"));
    EXPECT_TENSOR_NEAR(r.output, ref, port_tolerance(ref));
    EXPECT_THAT(map_names(r.maps), ElementsAre("se.attention"));
    EXPECT_TENSOR_NEAR(r.maps.at("se.attention"), fx.tensor("se.attention"), test::Tolerance{});
  }
}

TEST(PortResnetSe, StageGivesEveryMapAndHookByPath) {
  const auto fx = test::fixture("containers/resnet_stage");
  const auto net = stage();
  EXPECT_EQ(net->state_dict().keys(), fixture_keys(fx));
  net->load_state_dict(fx.weights());
  Tensor conv1;
  net->register_forward_hook(
      "layer1.0.conv1", [&](const std::string&, const Tensor&, const Tensor& out) { conv1 = out; });
  const Attended r = net->forward_with_maps(fx.tensor("input"));
  const Tensor ref = fx.tensor("output");
  EXPECT_TENSOR_NEAR(r.output, ref, port_tolerance(ref));
  EXPECT_THAT(map_names(r.maps), ElementsAre("layer1.0.se.attention", "layer1.1.se.attention"));
  for (const auto& m : map_names(r.maps)) {
    EXPECT_TENSOR_NEAR(r.maps.at(m), fx.tensor(m), test::Tolerance{}) << m;
  }
  EXPECT_TENSOR_NEAR(conv1, fx.tensor("hook_layer1.0.conv1"), test::Tolerance{});
}

TEST(PortResnetSe, WrongShapeNamesTheModulePath) {
  const auto net = stage();
  EXPECT_THAT(test::Call([&] {
                (void)net->forward(Tensor::zeros({2, 4, 11, 9}));
              }),
              ThrowsMessage<ShapeError>(StartsWith("stem.0: Conv2d::forward: tensor 'x'")));
  // Into layer1 directly with 7 channels where layer1.0.conv1 wants 8.
  EXPECT_THAT(test::Call([&] {
                (void)net->at("layer1")->forward(Tensor::zeros({1, 7, 6, 5}));
              }),
              ThrowsMessage<ShapeError>(StartsWith("0.conv1: Conv2d::forward: tensor 'x'")));
  // A block without its downsample fails in the block itself, named from the root.
  const Sequential bad{
      {"layer1", std::make_shared<Sequential>(Sequential{std::make_shared<BasicBlock>(8, 16, 2)})}};
  EXPECT_THAT(test::Call([&] {
                (void)bad.forward(Tensor::zeros({1, 8, 6, 6}));
              }),
              ThrowsMessage<ShapeError>(
                  HasSubstr("layer1.0: BasicBlock: the residual [1, 8, 6, 6] does not match")));
}

TEST(PortResnetSe, ConcurrencySharedStage) {
  const auto fx = test::fixture("containers/resnet_stage");
  const auto net = stage();
  net->load_state_dict(fx.weights());
  const Tensor x = fx.tensor("input");
  test::expect_thread_safe([&] {
    const Attended r = net->forward_with_maps(x);
    std::map<std::string, Tensor> out{{"output", r.output}};
    for (const auto& [k, v] : r.maps.items()) out.emplace(k, v);
    return out;
  });
}

}  // namespace
}  // namespace cvattn

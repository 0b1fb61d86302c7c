// Containers (Sequential with names, ModuleList, ModuleDict), registration on a user's own module,
// maps and hooks by path, module paths in errors, and MultiheadSelfAttention in a container,
// against tests/fixtures/containers (PyTorch, timm).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/functional/pooling.hpp"
#include "cvattn/modules/activation.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/containers.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/multihead_self_attention.hpp"
#include "cvattn/modules/sequential.hpp"
#include "cvattn/modules/squeeze_excitation.hpp"
#include "support/call.hpp"
#include "support/concurrency.hpp"
#include "support/fixtures.hpp"
#include "support/random.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// The fixture's Net, ported: stem = Sequential(OrderedDict(conv, bn, act)), blocks = ModuleList
// of Sequential(Conv2d, SEModule), heads = ModuleDict {cls, box}; output cat(cls, box).
class Net final : public UnaryModule {
 public:
  Net() {
    stem_ = register_module(
        "stem",
        std::make_shared<Sequential>(Sequential{
            {"conv", std::make_shared<Conv2d>(Conv2dOptions(3, 8, 3).padding(1).bias(false))},
            {"bn", std::make_shared<BatchNorm2d>(BatchNorm2dOptions(8))},
            {"act", std::make_shared<ReLU>()}}));
    blocks_ = register_module("blocks", std::make_shared<ModuleList>());
    for (int i = 0; i < 2; ++i) {
      blocks_->push_back(std::make_shared<Sequential>(Sequential{
          std::make_shared<Conv2d>(Conv2dOptions(8, 8, 3).padding(1)),
          std::make_shared<SqueezeExcitation>(SqueezeExcitationOptions(8).rd_channels(4))}));
    }
    heads_ = register_module("heads", std::make_shared<ModuleDict>());
    heads_->insert("cls", std::make_shared<Linear>(LinearOptions(8, 5)));
    heads_->insert("box", std::make_shared<Linear>(LinearOptions(8, 4)));
  }
  Tensor forward(const Tensor& x) const override { return run(x, nullptr); }
  Attended forward_with_maps(const Tensor& x) const override {
    Attended r;
    r.output = run(x, &r.maps);
    return r;
  }
  std::string describe() const override { return "Net"; }

 private:
  Tensor run(const Tensor& x, AttentionMaps* maps) const {
    Tensor y = call_child("stem", *stem_, x, maps);
    for (std::size_t i = 0; i < blocks_->size(); ++i) {
      y = call_child("blocks." + std::to_string(i), blocks_->unary(i), y, maps);
    }
    const Tensor pooled = functional::global_avg_pool2d(y).reshape({y.dim(0), y.dim(1)});
    const Tensor cls = call_child("heads.cls", heads_->unary("cls"), pooled, maps);
    const Tensor box = call_child("heads.box", heads_->unary("box"), pooled, maps);
    Tensor out = Tensor::empty({y.dim(0), cls.dim(1) + box.dim(1)});
    for (std::int64_t n = 0; n < y.dim(0); ++n) {
      float* row = out.data() + n * out.dim(1);
      for (std::int64_t j = 0; j < cls.dim(1); ++j) row[j] = cls[n * cls.dim(1) + j];
      for (std::int64_t j = 0; j < box.dim(1); ++j) row[cls.dim(1) + j] = box[n * box.dim(1) + j];
    }
    return out;
  }

  std::shared_ptr<Sequential> stem_;
  std::shared_ptr<ModuleList> blocks_;
  std::shared_ptr<ModuleDict> heads_;
};

// The (key, shape) table of params.json.
std::vector<std::pair<std::string, Shape>> fixture_keys(const test::Fixture& fx) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& k : fx.params()["keys"])
    out.emplace_back(k[0].get<std::string>(), k[1].get<Shape>());
  return out;
}

std::vector<std::pair<std::string, Shape>> module_keys(const Module& m) {
  std::vector<std::pair<std::string, Shape>> out;
  const StateDict dict = m.state_dict();
  for (const auto& e : dict.entries()) out.emplace_back(e.key, e.value.shape());
  return out;
}

std::map<std::string, Tensor> as_map(const Attended& r) {
  std::map<std::string, Tensor> out{{"output", r.output}};
  for (const auto& [name, t] : r.maps.items()) out.emplace(name, t);
  return out;
}

TEST(Containers, StateDictKeysArePyTorchsInOrder) {
  const auto fx = test::fixture("containers/net_keys");
  const Net net;
  EXPECT_EQ(module_keys(net), fixture_keys(fx));
}

TEST(Containers, NetMatchesPyTorchWithMapsByPath) {
  const auto fx = test::fixture("containers/net_keys");
  Net net;
  EXPECT_TRUE(net.load_state_dict(fx.weights()).empty());
  const Tensor x = fx.tensor("input");
  EXPECT_TENSOR_NEAR(net.forward(x), fx.tensor("output"), test::Tolerance{});
  const Attended r = net.forward_with_maps(x);
  EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
  std::vector<std::string> names;
  for (const auto& item : r.maps.items()) names.push_back(item.first);
  EXPECT_THAT(names, ElementsAre("blocks.0.1.attention", "blocks.1.1.attention"));
  for (const auto& name : names) {
    EXPECT_TENSOR_NEAR(r.maps.at(name), fx.tensor(name), test::Tolerance{}) << name;
  }
}

TEST(Containers, ForwardHookTakesAnIntermediateTensorByPath) {
  const auto fx = test::fixture("containers/net_keys");
  Net net;
  net.load_state_dict(fx.weights());
  std::vector<std::string> paths;
  Tensor taken, taken_input;
  net.register_forward_hook("blocks.1.0",
                            [&](const std::string& path, const Tensor& in, const Tensor& out) {
                              paths.push_back(path);
                              taken_input = in;
                              taken = out;
                            });
  (void)net.forward(fx.tensor("input"));
  EXPECT_THAT(paths, ElementsAre("blocks.1.0"));
  EXPECT_TENSOR_NEAR(taken, fx.tensor("hook_blocks.1.0"), test::Tolerance{});
  EXPECT_EQ(taken_input.shape(), taken.shape());
  (void)net.forward_with_maps(fx.tensor("input"));  // fires on the maps path too
  EXPECT_EQ(paths.size(), 2u);
  net.clear_forward_hooks();
  (void)net.forward(fx.tensor("input"));
  EXPECT_EQ(paths.size(), 2u);
}

TEST(Containers, HooksFireInExecutionOrderAndOnTheRootWhenCalled) {
  auto seq = std::make_shared<Sequential>(
      Sequential{{"a", std::make_shared<ReLU>()}, {"b", std::make_shared<Sigmoid>()}});
  std::vector<std::string> order;
  auto record = [&](const std::string& p, const Tensor&, const Tensor&) { order.push_back(p); };
  seq->register_forward_hook("b", record);
  seq->register_forward_hook("a", record);
  seq->register_forward_hook("", record);
  const Tensor x = test::random_tensor({2, 3}, 1);
  (void)seq->forward(x);  // forward() itself does not run the root's hooks
  EXPECT_THAT(order, ElementsAre("a", "b"));
  order.clear();
  (void)(*seq)(x);  // operator() does
  EXPECT_THAT(order, ElementsAre("a", "b", ""));
}

TEST(Containers, HookRegistrationErrorsNameThePath) {
  Net net;
  EXPECT_THAT(test::Call([&] { net.register_forward_hook("blocks.7", [](auto&&...) {}); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "Module::find('blocks.7'): 'blocks' has no child '7' (children: 0, 1)")));
  EXPECT_THAT(test::Call([&] { net.register_forward_hook("stem.relu", [](auto&&...) {}); }),
              ThrowsMessage<ValueError>(HasSubstr("children: conv, bn, act")));
  EXPECT_THAT(test::Call([&] { net.register_forward_hook("heads", [](auto&&...) {}); }),
              ThrowsMessage<ValueError>(HasSubstr("ModuleDict is not a UnaryModule")));
  EXPECT_THAT(test::Call([&] { net.register_forward_hook("stem", ForwardHook()); }),
              ThrowsMessage<ValueError>(HasSubstr("empty hook")));
}

TEST(Containers, ShapeErrorNamesTheModulePath) {
  Net net;
  // 5 channels where stem.conv wants 3.
  EXPECT_THAT(test::Call([&] {
                (void)net.forward(Tensor::zeros({1, 5, 7, 5}));
              }),
              ThrowsMessage<ShapeError>(HasSubstr("stem.conv: Conv2d::forward: tensor 'x'")));
  try {
    (void)net.forward_with_maps(Tensor::zeros({1, 5, 7, 5}));
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_EQ(e.module_path(), "stem.conv");
    EXPECT_THAT(e.message(), ::testing::StartsWith("Conv2d::forward: tensor 'x'"));
  }
}

TEST(Containers, NestedPathsAreJoinedOncePerLevel) {
  const Sequential net{
      {"stem", std::make_shared<Sequential>(Sequential{std::make_shared<Sequential>(
                   Sequential{{"conv", std::make_shared<Conv2d>(Conv2dOptions(3, 4, 3))}})})}};
  EXPECT_THAT(test::Call([&] {
                (void)net.forward(Tensor::zeros({1, 2, 5, 5}));
              }),
              ThrowsMessage<ShapeError>(::testing::StartsWith(
                  "stem.0.conv: Conv2d::forward: tensor 'x' expected shape [*, 3, *, *]")));
  // A ValueError stays a ValueError.
  EXPECT_THAT(test::Call([&] {
                (void)with_module_path("outer", [] {
                  throw ValueError("bad");
                  return 0;
                });
              }),
              ThrowsMessage<ValueError>(::testing::StrEq("outer: bad")));
}

TEST(Containers, MapsOfNestedSequentialsAreDotted) {
  auto se = std::make_shared<SqueezeExcitation>(SqueezeExcitationOptions(4).rd_channels(2));
  const Sequential net{{"layer1", std::make_shared<Sequential>(Sequential{
                                      std::make_shared<Sequential>(Sequential{{"se", se}})})}};
  const Tensor x = test::random_tensor({2, 4, 3, 5}, 3);
  const Attended r = net.forward_with_maps(x);
  ASSERT_EQ(r.maps.size(), 1u);
  EXPECT_EQ(r.maps.items()[0].first, "layer1.0.se.attention");
  EXPECT_TENSOR_NEAR(r.maps.at("layer1.0.se.attention"),
                     se->forward_with_maps(x).maps.at("attention"), (test::Tolerance{0, 0}));
}

TEST(Containers, DefaultForwardWithMapsHasNoMaps) {
  const ReLU relu;
  const Tensor x = test::random_tensor({3, 4}, 5);
  const Attended r = relu.forward_with_maps(x);
  EXPECT_TRUE(r.maps.empty());
  EXPECT_TENSOR_NEAR(r.output, relu.forward(x), (test::Tolerance{0, 0}));
}

TEST(Containers, DuplicateMapNamesAreRefused) {
  AttentionMaps maps;
  maps.add("attention", Tensor::zeros({1}));
  EXPECT_THAT(test::Call([&] { maps.add("attention", Tensor::zeros({1})); }),
              ThrowsMessage<ValueError>(HasSubstr("a map named 'attention' is already present")));
  AttentionMaps child;
  child.add("attention", Tensor::zeros({1}));
  maps.merge("se", child);
  EXPECT_TRUE(maps.contains("se.attention"));
  EXPECT_THAT(test::Call([&] { maps.merge("se", child); }),
              ThrowsMessage<ValueError>(HasSubstr("'se.attention' is already present")));
  // A parent that runs one child twice under one name gets the same error.
  auto se = std::make_shared<SqueezeExcitation>(SqueezeExcitationOptions(4).rd_channels(2));
  AttentionMaps twice;
  const Tensor x = test::random_tensor({1, 4, 2, 2}, 6);
  (void)call_child("se", *se, x, &twice);
  EXPECT_THAT(test::Call([&] { (void)call_child("se", *se, x, &twice); }),
              ThrowsMessage<ValueError>(HasSubstr("'se.attention' is already present")));
}

TEST(Containers, SequentialNamesAndIndices) {
  auto conv = std::make_shared<Conv2d>(Conv2dOptions(2, 3, 1));
  auto bn = std::make_shared<BatchNorm2d>(BatchNorm2dOptions(3));
  Sequential named{{"conv", conv}, {"bn", bn}};
  EXPECT_EQ(
      named.state_dict().keys(),
      (std::vector<std::string>{"conv.weight", "conv.bias", "bn.weight", "bn.bias",
                                "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"}));
  EXPECT_EQ(named.at("bn"), bn);
  EXPECT_EQ(named.name(0), "conv");
  std::shared_ptr<ReLU> act = named.push_back("act", std::make_shared<ReLU>());
  EXPECT_EQ(named.size(), 3u);
  EXPECT_EQ(named.at(2), act);
  EXPECT_THAT(
      test::Call([&] { (void)named.at("nope"); }),
      ThrowsMessage<ValueError>(HasSubstr("no module named 'nope' (names: conv, bn, act)")));
  EXPECT_THAT(test::Call([&] { named.push_back("bn", std::make_shared<ReLU>()); }),
              ThrowsMessage<ValueError>(HasSubstr("'bn' is already registered")));
  EXPECT_THAT(test::Call([&] { named.push_back("a.b", std::make_shared<ReLU>()); }),
              ThrowsMessage<ValueError>(HasSubstr("must not contain '.'")));
  EXPECT_THAT(test::Call([&] { named.push_back("", std::make_shared<ReLU>()); }),
              ThrowsMessage<ValueError>(HasSubstr("the name is empty")));
  EXPECT_THAT(test::Call([&] { named.push_back("x", std::shared_ptr<ReLU>()); }),
              ThrowsMessage<ValueError>(HasSubstr("is null")));

  Sequential unnamed{conv, bn};  // the old form still numbers its children
  unnamed.push_back(std::make_shared<ReLU>());
  EXPECT_EQ(unnamed.name(2), "2");
  EXPECT_EQ(unnamed.state_dict().keys().front(), "0.weight");
}

TEST(Containers, ModuleListAndModuleDict) {
  ModuleList list{std::make_shared<ReLU>(), std::make_shared<Linear>(LinearOptions(2, 3))};
  EXPECT_EQ(list.state_dict().keys(), (std::vector<std::string>{"1.weight", "1.bias"}));
  EXPECT_EQ(list.size(), 2u);
  int count = 0;
  for (const auto& m : list) count += m != nullptr;
  EXPECT_EQ(count, 2);
  EXPECT_THAT(test::Call([&] { (void)list.at(2); }),
              ThrowsMessage<ValueError>(HasSubstr("index 2 out of range")));

  ModuleDict dict{{"zeta", std::make_shared<Linear>(LinearOptions(1, 1))},
                  {"alpha", std::make_shared<Linear>(LinearOptions(1, 2))}};
  dict.insert("list", std::make_shared<ModuleList>());
  EXPECT_EQ(dict.keys(), (std::vector<std::string>{"zeta", "alpha", "list"}));  // insertion order
  EXPECT_EQ(dict.state_dict().keys(),
            (std::vector<std::string>{"zeta.weight", "zeta.bias", "alpha.weight", "alpha.bias"}));
  EXPECT_TRUE(dict.contains("alpha"));
  EXPECT_THAT(
      test::Call([&] { (void)dict.unary("list"); }),
      ThrowsMessage<ValueError>(HasSubstr("module 'list' (ModuleList) is not a UnaryModule")));
  EXPECT_THAT(
      test::Call([&] { (void)dict.at("beta"); }),
      ThrowsMessage<ValueError>(HasSubstr("no module under 'beta' (keys: zeta, alpha, list)")));
  EXPECT_THAT(test::Call([&] { dict.insert("alpha", std::make_shared<ReLU>()); }),
              ThrowsMessage<ValueError>(HasSubstr("'alpha' is already registered")));
}

TEST(Containers, PublicRegistrationOnAUserModule) {
  struct Scale final : UnaryModule {
    Scale() {
      gain = register_parameter("gain", Shape{3});
      offset = register_buffer("offset", Tensor::full({3}, 2.0f));
      inner = register_module("inner", std::make_shared<Linear>(LinearOptions(3, 3)));
    }
    Tensor forward(const Tensor& x) const override { return x; }
    std::string describe() const override { return "Scale"; }
    Tensor gain, offset;
    std::shared_ptr<Linear> inner;
  };
  Scale s;
  EXPECT_EQ(s.state_dict().keys(),
            (std::vector<std::string>{"gain", "offset", "inner.weight", "inner.bias"}));
  ASSERT_EQ(s.named_buffers().size(), 1u);
  EXPECT_EQ(s.named_buffers()[0].first, "offset");
  EXPECT_EQ(s.named_parameters().size(), 3u);
  StateDict d = s.state_dict();
  d.set("offset", Tensor::full({3}, 5.0f));
  d.set("gain", Tensor::full({3}, 7.0f));
  s.load_state_dict(d);
  EXPECT_EQ(s.offset[1], 5.0f);  // the registered tensor's own storage was written
  EXPECT_EQ(s.gain[2], 7.0f);
  EXPECT_THAT(
      test::Call([&] { s.register_parameter("gain", Shape{1}); }),
      ThrowsMessage<ValueError>(HasSubstr("register_parameter: 'gain' is already registered")));
  std::vector<std::string> paths;
  for (const auto& [p, m] : s.named_modules()) paths.push_back(p);
  EXPECT_THAT(paths, ElementsAre("", "inner"));
  EXPECT_EQ(&s.find("inner"), s.inner.get());
}

TEST(Containers, TimmAttentionRenamedIntoMultiheadSelfAttention) {
  const auto fx = test::fixture("containers/timm_attention");
  const auto E = fx.params()["embed_dim"].get<std::int64_t>();
  const auto H = fx.params()["num_heads"].get<std::int64_t>();
  Sequential block{
      {"attn", std::make_shared<MultiheadSelfAttention>(MultiheadAttentionOptions(E, H))}};
  EXPECT_EQ(block.state_dict().keys(),
            (std::vector<std::string>{"attn.in_proj_weight", "attn.in_proj_bias",
                                      "attn.out_proj.weight", "attn.out_proj.bias"}));
  // timm's Attention: qkv rows are [q; k; v] as in in_proj_weight; proj is out_proj.
  const StateDict renamed =
      rename_keys(fx.weights(), KeyRenames()
                                    .regex(R"(\.qkv\.(weight|bias)$)", ".in_proj_$1")
                                    .regex(R"(\.proj\.)", ".out_proj."));
  block.load_state_dict(renamed);
  const Tensor x = fx.tensor("input");
  EXPECT_TENSOR_NEAR(block.forward(x), fx.tensor("output"), test::Tolerance{});
  const Attended r = block.forward_with_maps(x);
  EXPECT_TENSOR_NEAR(r.output, fx.tensor("output"), test::Tolerance{});
  EXPECT_TENSOR_NEAR(r.maps.at("attn.attn_weights"), fx.tensor("attn_weights"), test::Tolerance{});
  // The wrapped module is loaded too (one set of tensors).
  const auto& msa = dynamic_cast<const MultiheadSelfAttention&>(*block.at("attn"));
  EXPECT_TENSOR_NEAR(msa.attention().state_dict().at("in_proj_bias"),
                     renamed.at("attn.in_proj_bias"), (test::Tolerance{0, 0}));
  EXPECT_THAT(
      test::Call([&] {
        (void)block.forward(Tensor::zeros({2, 5, E + 1}));
      }),
      ThrowsMessage<ShapeError>(::testing::StartsWith("attn: MultiheadAttention::forward")));
}

TEST(Containers, MultiheadSelfAttentionRejectsCrossDims) {
  EXPECT_THAT(test::Call([] { MultiheadSelfAttention m(MultiheadAttentionOptions(4, 2).kdim(3)); }),
              ThrowsMessage<ValueError>(HasSubstr("must equal embed_dim (4)")));
}

TEST(Containers, ConcurrencyNetWithMapsAndHooks) {
  const auto fx = test::fixture("containers/net_keys");
  Net net;
  net.load_state_dict(fx.weights());
  std::atomic<int> calls{0};
  net.register_forward_hook("blocks.0.1", [&](auto&&...) { ++calls; });
  const Tensor x = fx.tensor("input");
  test::expect_thread_safe([&] { return as_map(net.forward_with_maps(x)); });
  EXPECT_GT(calls.load(), 8);
}

}  // namespace
}  // namespace cvattn

// docs/porting.md §7: torchvision's VisionTransformer (the class of vit_b_16) ported to C++ with
// containers, MultiheadSelfAttention, LayerNorm and GELU, checked against torchvision on
// tests/fixtures/containers/vit_tiny (random weights, a test-sized configuration) and on
// vit_b_16 itself (tests/fixtures/port_vit.py: weights regenerated from a seed).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/module.hpp"
#include "cvattn/functional/tensor_ops.hpp"
#include "cvattn/modules/activation_layers.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/dropout.hpp"
#include "cvattn/modules/linear.hpp"
#include "cvattn/modules/multihead_self_attention.hpp"
#include "cvattn/modules/normalization.hpp"
#include "cvattn/modules/sequential.hpp"
#include "support/call.hpp"
#include "support/concurrency.hpp"
#include "support/fixtures.hpp"
#include "support/model_fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

namespace F = functional;
using ::testing::ElementsAre;
using ::testing::StartsWith;
using ::testing::ThrowsMessage;

// ---- the port, as in docs/porting.md ----------------------------------------------------------

std::shared_ptr<LayerNorm> layer_norm(std::int64_t dim) {  // norm_layer = LayerNorm(eps=1e-6)
  return std::make_shared<LayerNorm>(LayerNormOptions({dim}).eps(1e-6));
}

// torchvision.models.vision_transformer.EncoderBlock.
class EncoderBlock final : public UnaryModule {
 public:
  EncoderBlock(std::int64_t num_heads, std::int64_t hidden_dim, std::int64_t mlp_dim) {
    ln_1_ = register_module("ln_1", layer_norm(hidden_dim));
    self_attention_ = register_module(
        "self_attention",
        std::make_shared<MultiheadSelfAttention>(MultiheadAttentionOptions(hidden_dim, num_heads)));
    dropout_ = register_module("dropout", std::make_shared<Dropout>(0.0));
    ln_2_ = register_module("ln_2", layer_norm(hidden_dim));
    // MLPBlock: Linear, GELU, Dropout, Linear, Dropout -> keys mlp.0.*, mlp.3.*.
    mlp_ = register_module("mlp", std::make_shared<Sequential>(Sequential{
                                      std::make_shared<Linear>(LinearOptions(hidden_dim, mlp_dim)),
                                      std::make_shared<GELU>(), std::make_shared<Dropout>(0.0),
                                      std::make_shared<Linear>(LinearOptions(mlp_dim, hidden_dim)),
                                      std::make_shared<Dropout>(0.0)}));
  }
  Tensor forward(const Tensor& x) const override { return run(x, nullptr); }
  Attended forward_with_maps(const Tensor& x) const override {
    Attended r;
    r.output = run(x, &r.maps);
    return r;
  }
  std::string describe() const override { return "EncoderBlock"; }

 private:
  Tensor run(const Tensor& input, AttentionMaps* maps) const {
    Tensor x = call_child("ln_1", *ln_1_, input, maps);
    x = call_child("self_attention", *self_attention_, x,
                   maps);  // map "self_attention.attn_weights"
    x = call_child("dropout", *dropout_, x, maps);
    x = F::add(x, input);
    Tensor y = call_child("ln_2", *ln_2_, x, maps);
    y = call_child("mlp", *mlp_, y, maps);
    return F::add(x, y);
  }

  std::shared_ptr<LayerNorm> ln_1_, ln_2_;
  std::shared_ptr<MultiheadSelfAttention> self_attention_;
  std::shared_ptr<Dropout> dropout_;
  std::shared_ptr<Sequential> mlp_;
};

// torchvision's Encoder: pos_embedding, layers (encoder_layer_<i>), ln.
class Encoder final : public UnaryModule {
 public:
  Encoder(std::int64_t seq_length, std::int64_t num_layers, std::int64_t num_heads,
          std::int64_t hidden_dim, std::int64_t mlp_dim) {
    pos_embedding_ = register_parameter("pos_embedding", Shape{1, seq_length, hidden_dim});
    dropout_ = register_module("dropout", std::make_shared<Dropout>(0.0));
    layers_ = register_module("layers", std::make_shared<Sequential>());
    for (std::int64_t i = 0; i < num_layers; ++i) {
      layers_->push_back("encoder_layer_" + std::to_string(i),
                         std::make_shared<EncoderBlock>(num_heads, hidden_dim, mlp_dim));
    }
    ln_ = register_module("ln", layer_norm(hidden_dim));
  }
  Tensor forward(const Tensor& x) const override { return run(x, nullptr); }
  Attended forward_with_maps(const Tensor& x) const override {
    Attended r;
    r.output = run(x, &r.maps);
    return r;
  }
  std::string describe() const override { return "Encoder"; }

 private:
  Tensor run(const Tensor& x, AttentionMaps* maps) const {
    Tensor y = F::add(x, pos_embedding_);  // [N, S, E] + [1, S, E]
    y = call_child("dropout", *dropout_, y, maps);
    y = call_child("layers", *layers_, y, maps);
    return call_child("ln", *ln_, y, maps);
  }

  Tensor pos_embedding_;
  std::shared_ptr<Dropout> dropout_;
  std::shared_ptr<Sequential> layers_;
  std::shared_ptr<LayerNorm> ln_;
};

// torchvision.models.vision_transformer.VisionTransformer (vit_b_16 is image 224, patch 16,
// 12 layers, 12 heads, hidden 768, MLP 3072, 1000 classes).
class VisionTransformer final : public UnaryModule {
 public:
  VisionTransformer(std::int64_t image_size, std::int64_t patch_size, std::int64_t num_layers,
                    std::int64_t num_heads, std::int64_t hidden_dim, std::int64_t mlp_dim,
                    std::int64_t num_classes)
      : hidden_dim_(hidden_dim) {
    class_token_ = register_parameter("class_token", Shape{1, 1, hidden_dim});
    conv_proj_ = register_module(
        "conv_proj",
        std::make_shared<Conv2d>(Conv2dOptions(3, hidden_dim, patch_size).stride(patch_size)));
    const std::int64_t seq_length = (image_size / patch_size) * (image_size / patch_size) + 1;
    encoder_ = register_module(
        "encoder",
        std::make_shared<Encoder>(seq_length, num_layers, num_heads, hidden_dim, mlp_dim));
    heads_ = register_module(
        "heads", std::make_shared<Sequential>(Sequential{
                     {"head", std::make_shared<Linear>(LinearOptions(hidden_dim, num_classes))}}));
  }
  Tensor forward(const Tensor& x) const override { return run(x, nullptr); }
  Attended forward_with_maps(const Tensor& x) const override {
    Attended r;
    r.output = run(x, &r.maps);
    return r;
  }
  std::string describe() const override { return "VisionTransformer"; }

 private:
  Tensor run(const Tensor& x, AttentionMaps* maps) const {
    // _process_input: conv_proj, then [N, E, h, w] -> [N, h*w, E].
    const Tensor p = call_child("conv_proj", *conv_proj_, x, maps);
    const std::int64_t n = p.dim(0);
    const Tensor tokens =
        F::permute(F::reshape(p, {n, hidden_dim_, p.dim(2) * p.dim(3)}), {0, 2, 1});
    // class_token.expand(n, -1, -1), then cat along the tokens.
    const Tensor cls = F::cat(std::vector<Tensor>(static_cast<std::size_t>(n), class_token_), 0);
    Tensor y = F::cat({cls, tokens}, 1);
    y = call_child("encoder", *encoder_, y, maps);
    return call_child("heads", *heads_, F::select(y, 1, 0), maps);  // x[:, 0]
  }

  std::int64_t hidden_dim_;
  Tensor class_token_;
  std::shared_ptr<Conv2d> conv_proj_;
  std::shared_ptr<Encoder> encoder_;
  std::shared_ptr<Sequential> heads_;
};

// ---- the checks ------------------------------------------------------------------------------

std::shared_ptr<VisionTransformer> make_vit(const test::Fixture& fx) {
  const auto& p = fx.params();
  auto get = [&](const char* k) { return p[k].get<std::int64_t>(); };
  return std::make_shared<VisionTransformer>(get("image_size"), get("patch_size"),
                                             get("num_layers"), get("num_heads"), get("hidden_dim"),
                                             get("mlp_dim"), get("num_classes"));
}

test::Tolerance port_tolerance(const Tensor& ref) {  // the 1e-4 * (1 + max|ref|)
  float m = 0.0f;
  for (std::int64_t i = 0; i < ref.numel(); ++i) m = std::max(m, std::abs(ref[i]));
  return test::Tolerance{1e-4 * (1.0 + m), 0.0};
}

TEST(PortVit, KeysAreTorchvisions) {
  const auto fx = test::fixture("containers/vit_tiny");
  std::vector<std::string> keys;
  for (const auto& k : fx.params()["keys"]) keys.push_back(k[0].get<std::string>());
  EXPECT_EQ(make_vit(fx)->state_dict().keys(), keys);
}

TEST(PortVit, MatchesTorchvisionWithEveryAttentionMap) {
  const auto fx = test::fixture("containers/vit_tiny");
  const auto vit = make_vit(fx);
  EXPECT_TRUE(vit->load_state_dict(fx.weights()).empty());
  const Tensor ref = fx.tensor("output");
  EXPECT_TENSOR_NEAR(vit->forward(fx.tensor("input")), ref, port_tolerance(ref));
  const Attended r = vit->forward_with_maps(fx.tensor("input"));
  EXPECT_TENSOR_NEAR(r.output, ref, port_tolerance(ref));
  std::vector<std::string> names;
  for (const auto& item : r.maps.items()) names.push_back(item.first);
  EXPECT_THAT(names, ElementsAre("encoder.layers.encoder_layer_0.self_attention.attn_weights",
                                 "encoder.layers.encoder_layer_1.self_attention.attn_weights"));
  for (const auto& name : names) {
    EXPECT_TENSOR_NEAR(r.maps.at(name), fx.tensor(name), test::Tolerance{}) << name;
  }
}

TEST(PortVit, WrongImageSizeNamesThePath) {
  const auto fx = test::fixture("containers/vit_tiny");
  const auto vit = make_vit(fx);
  // 40x40 gives 25 + 1 tokens where pos_embedding has 17.
  EXPECT_THAT(test::Call([&] {
                (void)vit->forward(Tensor::zeros({1, 3, 40, 40}));
              }),
              ThrowsMessage<ShapeError>(StartsWith("encoder: ")));
}

TEST(PortVit, ConcurrencySharedVit) {
  const auto fx = test::fixture("containers/vit_tiny");
  const auto vit = make_vit(fx);
  vit->load_state_dict(fx.weights());
  const Tensor x = fx.tensor("input");
  test::expect_thread_safe([&] {
    const Attended r = vit->forward_with_maps(x);
    std::map<std::string, Tensor> out{{"output", r.output}};
    for (const auto& [k, v] : r.maps.items()) out.emplace(k, v);
    return out;
  });
}

// torchvision's vit_b_16 at full size (86 M generated weights): logits, the class token after the
// encoder (taken by a forward hook) and the first and last layers' attention weights.
TEST(PortVit, VitB16MatchesTorchvision) {
  const auto fx = test::fixture("port_vit/vit_b_16");
  const auto vit = std::make_shared<VisionTransformer>(224, 16, 12, 12, 768, 3072, 1000);
  const auto seed = fx.params()["seed"].get<std::uint64_t>();
  test::GeneratedWeights w = test::generated_state_dict(*vit, seed);
  ASSERT_EQ(test::hex(w.checksum), fx.params()["checksum"].get<std::string>());
  EXPECT_TRUE(vit->load_state_dict(w.dict).empty());
  Tensor encoded;
  vit->register_forward_hook(
      "encoder", [&](const std::string&, const Tensor&, const Tensor& out) { encoded = out; });
  const Attended r = vit->forward_with_maps(test::generated("input", {1, 3, 224, 224}, seed));
  const Tensor ref = fx.tensor("output");
  EXPECT_TENSOR_NEAR(r.output, ref, port_tolerance(ref));
  ASSERT_EQ(encoded.shape(), (Shape{1, 197, 768}));
  const Tensor cls_ref = fx.tensor("class_token");
  EXPECT_TENSOR_NEAR(F::select(encoded, 1, 0), cls_ref, port_tolerance(cls_ref));
  EXPECT_EQ(r.maps.size(), 12u);
  for (const auto& layer : fx.params()["map_layers"]) {
    const std::string name = "encoder.layers.encoder_layer_" + std::to_string(layer.get<int>()) +
                             ".self_attention.attn_weights";
    const Tensor m = fx.tensor(name);
    EXPECT_TENSOR_NEAR(r.maps.at(name), m, port_tolerance(m)) << name;
  }
}

}  // namespace
}  // namespace cvattn

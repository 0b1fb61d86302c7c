// Loading like PyTorch: strict and non-strict reports (IncompatibleKeys), rename_keys,
// from_state_dict(dict, prefix, ...), and PyTorch .pt/.pth files (torch.save's zip and legacy
// pickle formats) refused with the conversion command, against tests/fixtures/containers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/modules/batch_norm2d.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/multihead_attention.hpp"
#include "cvattn/modules/sequential.hpp"
#include "cvattn/modules/squeeze_excitation.hpp"
#include "support/call.hpp"
#include "support/cli.hpp"
#include "support/fixtures.hpp"
#include "support/tensor_near.hpp"

namespace cvattn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

// torch.nn.Sequential(Conv2d(3, 4, 3), BatchNorm2d(4)), the pt_files case.
Sequential conv_bn() {
  return Sequential{std::make_shared<Conv2d>(Conv2dOptions(3, 4, 3)),
                    std::make_shared<BatchNorm2d>(BatchNorm2dOptions(4))};
}

void expect_fixture_values(const Module& m, const test::Fixture& fx) {
  for (const char* k :
       {"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var"}) {
    std::string file = k;
    for (auto& c : file) c = c == '.' ? '_' : c;
    EXPECT_TENSOR_NEAR(m.state_dict().at(k), fx.tensor(file), (test::Tolerance{0, 0})) << k;
  }
}

TEST(Loading, NonStrictReportsMissingAndUnexpectedKeys) {
  const auto fx = test::fixture("containers/pt_files");
  StateDict d = io::load_safetensors(fx.path("state_dict.safetensors"));
  d.erase("1.running_var");
  d.erase("0.bias");
  d.set("head.weight", Tensor::zeros({2}));
  d.set("1.extra", Tensor::zeros({1}));
  Sequential m = conv_bn();
  const IncompatibleKeys r = m.load_state_dict(d, Strict::no);
  EXPECT_THAT(r.missing_keys, ElementsAre("0.bias", "1.running_var"));    // the module's order
  EXPECT_THAT(r.unexpected_keys, ElementsAre("head.weight", "1.extra"));  // the dict's order
  EXPECT_FALSE(r.empty());
  // What was present was loaded, what was missing kept its value (BatchNorm's fresh var = 1).
  EXPECT_TENSOR_NEAR(m.state_dict().at("0.weight"), fx.tensor("0_weight"), (test::Tolerance{0, 0}));
  EXPECT_EQ(m.state_dict().at("1.running_var")[0], 1.0f);
}

TEST(Loading, StrictReportsEverythingInOneErrorAndLoadsNothing) {
  const auto fx = test::fixture("containers/pt_files");
  StateDict d = io::load_safetensors(fx.path("state_dict.safetensors"));
  d.erase("0.bias");
  d.set("head.weight", Tensor::zeros({2}));
  Sequential m = conv_bn();
  EXPECT_THAT(test::Call([&] { (void)m.load_state_dict(d); }),
              ThrowsMessage<ValueError>(HasSubstr(
                  "load_state_dict(Sequential): missing '0.bias'; unexpected 'head.weight'")));
  EXPECT_EQ(m.state_dict().at("0.weight")[0], 0.0f);  // untouched
  // A complete dict: the report is empty.
  EXPECT_TRUE(m.load_state_dict(io::load_safetensors(fx.path("state_dict.safetensors"))).empty());
}

TEST(Loading, ShapeMismatchIsAnErrorEvenWhenNotStrict) {
  const auto fx = test::fixture("containers/pt_files");
  StateDict d = io::load_safetensors(fx.path("state_dict.safetensors"));
  d.set("1.weight", Tensor::zeros({5}));
  Sequential m = conv_bn();
  EXPECT_THAT(test::Call([&] { (void)m.load_state_dict(d, Strict::no); }),
              ThrowsMessage<ValueError>(HasSubstr("'1.weight' expected [4], got [5]")));
}

TEST(Loading, RenameKeysByPrefixRegexAndDrop) {
  StateDict d;
  d.set("module.backbone.blocks.0.attn.qkv.weight", Tensor::full({3}, 1.0f));
  d.set("module.backbone.blocks.0.attn.qkv.bias", Tensor::full({3}, 2.0f));
  d.set("module.backbone.blocks.0.attn.proj.weight", Tensor::full({1}, 3.0f));
  d.set("module.head.weight", Tensor::full({1}, 4.0f));
  d.set("module.backbone.norm.num_batches_tracked", Tensor::zeros({}), /*integer=*/true);
  const StateDict r = rename_keys(d, KeyRenames()
                                         .prefix("module.", "")
                                         .prefix("backbone.", "encoder.")
                                         .drop(R"(^head\.)")
                                         .regex(R"(\.qkv\.(weight|bias)$)", ".in_proj_$1")
                                         .regex(R"(\.proj\.)", ".out_proj."));
  EXPECT_EQ(r.keys(),
            (std::vector<std::string>{
                "encoder.blocks.0.attn.in_proj_weight", "encoder.blocks.0.attn.in_proj_bias",
                "encoder.blocks.0.attn.out_proj.weight", "encoder.norm.num_batches_tracked"}));
  EXPECT_EQ(r.at("encoder.blocks.0.attn.in_proj_bias").data(),
            d.at("module.backbone.blocks.0.attn.qkv.bias").data());  // shared, not copied
  EXPECT_TRUE(r.find("encoder.norm.num_batches_tracked")->integer);
  // A prefix only matches at the start; a key no rule matches is kept as it is.
  EXPECT_EQ(*KeyRenames().prefix("blocks.", "layers.").apply("x.blocks.0"), "x.blocks.0");
}

TEST(Loading, RenameKeysRefusesCollisionsAndBadPatterns) {
  StateDict d;
  d.set("a.weight", Tensor::zeros({1}));
  d.set("b.weight", Tensor::zeros({1}));
  EXPECT_THAT(test::Call([&] { (void)rename_keys(d, KeyRenames().regex("^[ab]", "c")); }),
              ThrowsMessage<ValueError>(
                  HasSubstr("rename_keys: 'a.weight' and 'b.weight' both become 'c.weight'")));
  EXPECT_THAT(test::Call([&] { (void)rename_keys(d, KeyRenames().regex(".*", "")); }),
              ThrowsMessage<ValueError>(HasSubstr("'a.weight' becomes an empty key")));
  EXPECT_THAT(test::Call([] { (void)KeyRenames().regex("(unclosed", "x"); }),
              ThrowsMessage<ValueError>(HasSubstr("KeyRenames::regex: bad pattern '(unclosed'")));
}

TEST(Loading, FromStateDictTakesAPrefix) {
  const auto fx = test::fixture("containers/net_keys");
  const StateDict w = fx.weights();
  const auto se = SqueezeExcitationOptions::from_state_dict(w, "blocks.0.1");
  EXPECT_EQ(se.channels(), 8);
  EXPECT_EQ(se.reduced_channels(), 4);
  EXPECT_EQ(SqueezeExcitationOptions::from_state_dict(w, "blocks.1.1.").channels(), 8);
  EXPECT_EQ(BatchNorm2dOptions::from_state_dict(w, "stem.bn").num_features(), 8);
  EXPECT_FALSE(Conv2dOptions::from_state_dict(w, "stem.conv").bias());
  EXPECT_THAT(test::Call([&] { (void)SqueezeExcitationOptions::from_state_dict(w, "blocks.2.1"); }),
              ThrowsMessage<ValueError>(HasSubstr("(keys under 'blocks.2.1.')")));

  const auto tfx = test::fixture("containers/timm_attention");
  const StateDict renamed = rename_keys(
      tfx.weights(),
      KeyRenames().regex(R"(qkv\.(weight|bias))", "in_proj_$1").regex(R"(\.proj\.)", ".out_proj."));
  const auto mha = MultiheadAttentionOptions::from_state_dict(renamed, "attn", 3);
  EXPECT_EQ(mha.embed_dim(), 12);
  EXPECT_TRUE(mha.bias());
}

TEST(Loading, PyTorchFilesAreRefusedWithTheConversionCommand) {
  const auto fx = test::fixture("containers/pt_files");
  const std::string zip = fx.path("state_dict.pt");
  EXPECT_THAT(
      test::Call([&] { (void)io::load_safetensors(zip); }),
      ThrowsMessage<IoError>(AllOf(HasSubstr("is a zip archive"), HasSubstr("saved by torch.save"),
                                   HasSubstr("convert it with: python3 tools/export_weights.py " +
                                             zip + " " + fx.path("state_dict.safetensors")))));
  EXPECT_THAT(test::Call([&] { (void)io::load_safetensors(fx.path("legacy.pt")); }),
              ThrowsMessage<IoError>(AllOf(HasSubstr("is a Python pickle (protocol 2)"),
                                           HasSubstr("legacy torch.save format"),
                                           HasSubstr("tools/export_weights.py"))));
  EXPECT_THAT(test::Call([&] { (void)io::load_safetensors(fx.path("module.pt")); }),
              ThrowsMessage<IoError>(HasSubstr("is a zip archive")));
  EXPECT_THAT(test::Call([&] { (void)io::load_safetensors(fx.path("checkpoint.pth")); }),
              ThrowsMessage<IoError>(HasSubstr("checkpoint.safetensors")));
  EXPECT_THAT(test::Call([&] { (void)io::load_safetensors(fx.path("0_weight.npy")); }),
              ThrowsMessage<IoError>(HasSubstr("is a NumPy .npy array")));
}

TEST(Loading, ExportedCheckpointsLoadStrictly) {
  // tools/export_weights.py on a state_dict (zip and legacy), a whole module and a training
  // checkpoint {'epoch', 'model'}: the same tensors each time.
  const auto fx = test::fixture("containers/pt_files");
  for (const char* file : {"state_dict", "legacy", "module", "checkpoint"}) {
    SCOPED_TRACE(file);
    const StateDict d = io::load_safetensors(fx.path(std::string(file) + ".safetensors"));
    std::vector<std::string> keys;
    for (const auto& k : fx.params()["keys"]) keys.push_back(k[0].get<std::string>());
    std::vector<std::string> got = d.keys();  // the reader lists keys sorted
    std::sort(keys.begin(), keys.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, keys);
    EXPECT_TRUE(d.find("1.num_batches_tracked")->integer);
    Sequential m = conv_bn();
    EXPECT_TRUE(m.load_state_dict(d).empty());
    expect_fixture_values(m, fx);
  }
}

class LoadingCli : public test::CliTest {};

TEST_F(LoadingCli, WeightsGivenAsPtFileSayHowToConvert) {
  const auto fx = test::fixture("containers/pt_files");
  const auto se = test::fixture("channel/se_c64_default");
  const test::CliResult r = run("run se --in input=" + se.path("input.npy") + " --weights " +
                                fx.path("state_dict.pt") + " --out output=" + path("out.npy"));
  expect_input_error(r, "is a zip archive");
  EXPECT_THAT(r.err, HasSubstr("python3 tools/export_weights.py " + fx.path("state_dict.pt")));
}

}  // namespace
}  // namespace cvattn

#include "cvattn/models/timm.hpp"

#include <functional>
#include <utility>

#include "cvattn/core/error.hpp"
#include "cvattn/models/byobnet.hpp"
#include "cvattn/models/efficientnet.hpp"
#include "cvattn/models/resnet.hpp"
#include "cvattn/models/swin_transformer.hpp"
#include "cvattn/models/vision_transformer.hpp"

namespace cvattn::models {
namespace {

using Builder = std::function<std::shared_ptr<Network>(std::int64_t num_classes)>;

struct Entry {
  std::string name;
  std::string classifier;  // the key num_classes is read from
  Builder build;
};

// timm's entrypoints (models/resnet.py, models/sknet.py), with their model_args.
Builder resnet(const std::string& name, ResNetOptions options) {
  return [name, options](std::int64_t num_classes) -> std::shared_ptr<Network> {
    ResNetOptions o = options;
    return std::make_shared<ResNet>(o.model_name(name).num_classes(num_classes));
  };
}

const std::vector<Entry>& registry() {
  using B = ResNetBlock;
  static const std::vector<Entry> entries = [] {
    const std::vector<std::int64_t> r18{2, 2, 2, 2}, r34{3, 4, 6, 3};
    // skresnet18/34: sk_kwargs = dict(rd_ratio=1/8, rd_divisor=16, split_input=True)
    // The 'D' variants: deep stem of width 32, average-pool downsampling.
    auto deep_d = [](ResNetOptions o) {
      return o.stem_width(32).stem_type(StemType::deep).avg_down(true);
    };
    auto sk = [](ResNetOptions o) {
      return o.sk_rd_ratio(1.0 / 8.0).sk_rd_divisor(16).sk_split_input(true);
    };
    std::vector<std::pair<std::string, ResNetOptions>> configs = {
        {"resnet18", ResNetOptions(B::basic, r18)},
        {"resnet50", ResNetOptions(B::bottleneck, r34)},
        {"seresnet18", ResNetOptions(B::basic, r18).attn_layer(BlockAttention::se)},
        {"seresnet50", ResNetOptions(B::bottleneck, r34).attn_layer(BlockAttention::se)},
        {"seresnext26d_32x4d", ResNetOptions(B::bottleneck, r18)
                                   .cardinality(32)
                                   .base_width(4)
                                   .stem_width(32)
                                   .stem_type(StemType::deep)
                                   .avg_down(true)
                                   .attn_layer(BlockAttention::se)},
        {"ecaresnet26t", ResNetOptions(B::bottleneck, r18)
                             .stem_width(32)
                             .stem_type(StemType::deep_tiered)
                             .avg_down(true)
                             .attn_layer(BlockAttention::eca)},
        {"skresnet18", sk(ResNetOptions(B::selective_kernel_basic, r18))},
        {"skresnet34", sk(ResNetOptions(B::selective_kernel_basic, r34))},
        // More of the same families.
        {"resnet34", ResNetOptions(B::basic, r34)},
        {"resnet26d", deep_d(ResNetOptions(B::bottleneck, r18))},
        {"resnet50d", deep_d(ResNetOptions(B::bottleneck, r34))},
        {"resnext50_32x4d", ResNetOptions(B::bottleneck, r34).cardinality(32).base_width(4)},
        {"seresnet34", ResNetOptions(B::basic, r34).attn_layer(BlockAttention::se)},
        {"seresnext50_32x4d", ResNetOptions(B::bottleneck, r34)
                                  .cardinality(32)
                                  .base_width(4)
                                  .attn_layer(BlockAttention::se)},
        {"ecaresnet50d", deep_d(ResNetOptions(B::bottleneck, r34)).attn_layer(BlockAttention::eca)},
        // skresnet50: sk_kwargs = dict(split_input=True)
        {"skresnet50", ResNetOptions(B::selective_kernel_bottleneck, r34).sk_split_input(true)},
        // skresnext50_32x4d: sk_kwargs = dict(rd_ratio=1/16, rd_divisor=32, split_input=False)
        {"skresnext50_32x4d", ResNetOptions(B::selective_kernel_bottleneck, r34)
                                  .cardinality(32)
                                  .base_width(4)
                                  .sk_rd_ratio(1.0 / 16.0)
                                  .sk_rd_divisor(32)
                                  .sk_split_input(false)},
    };
    std::vector<Entry> out;
    for (auto& [name, options] : configs) out.push_back({name, "fc.weight", resnet(name, options)});
    // models/vision_transformer.py and models/deit.py: patch 16 at 224, mlp_ratio 4.
    const std::vector<std::pair<std::string, VisionTransformerOptions>> vits = {
        {"vit_tiny_patch16_224", VisionTransformerOptions(192, 12, 3)},
        {"vit_small_patch16_224", VisionTransformerOptions(384, 12, 6)},
        {"deit_tiny_patch16_224", VisionTransformerOptions(192, 12, 3)},
        {"deit_tiny_distilled_patch16_224", VisionTransformerOptions(192, 12, 3).distilled(true)},
    };
    for (const auto& [name, options] : vits) {
      out.push_back(
          {name, "head.weight", [name = name, options = options](std::int64_t num_classes) {
             VisionTransformerOptions o = options;
             return std::shared_ptr<Network>(
                 std::make_shared<VisionTransformer>(o.model_name(name).num_classes(num_classes)));
           }});
    }
    // --- mobile: entries of this family ---
    // models/mobilenetv3.py _gen_mobilenet_v3 and models/efficientnet.py _gen_efficientnet /
    // _gen_efficientnet_condconv, channel and depth multipliers 1.0.
    const std::vector<std::pair<std::string, MobileNetOptions>> mobiles = {
        {"mobilenetv3_small_100",
         MobileNetOptions({{"ds_r1_k3_s2_e1_c16_se0.25_nre"},
                           {"ir_r1_k3_s2_e4.5_c24_nre", "ir_r1_k3_s1_e3.67_c24_nre"},
                           {"ir_r1_k5_s2_e4_c40_se0.25", "ir_r2_k5_s1_e6_c40_se0.25"},
                           {"ir_r2_k5_s1_e3_c48_se0.25"},
                           {"ir_r3_k5_s2_e6_c96_se0.25"},
                           {"cn_r1_k1_s1_c576"}})
             .head(MobileHead::mobilenetv3)
             .stem_size(16)
             .num_features(1024)
             .act_layer(ActLayer::hard_swish)
             .se_from_exp(true)
             .se_round_channels(true)
             .se_act_layer(ActLayer::relu)
             .se_gate_layer(GateLayer::hard_sigmoid)},
        {"mobilenetv3_large_100",
         MobileNetOptions({{"ds_r1_k3_s1_e1_c16_nre"},
                           {"ir_r1_k3_s2_e4_c24_nre", "ir_r1_k3_s1_e3_c24_nre"},
                           {"ir_r3_k5_s2_e3_c40_se0.25_nre"},
                           {"ir_r1_k3_s2_e6_c80", "ir_r1_k3_s1_e2.5_c80", "ir_r2_k3_s1_e2.3_c80"},
                           {"ir_r2_k3_s1_e6_c112_se0.25"},
                           {"ir_r3_k5_s2_e6_c160_se0.25"},
                           {"cn_r1_k1_s1_c960"}})
             .head(MobileHead::mobilenetv3)
             .stem_size(16)
             .num_features(1280)
             .act_layer(ActLayer::hard_swish)
             .se_from_exp(true)
             .se_round_channels(true)
             .se_act_layer(ActLayer::relu)
             .se_gate_layer(GateLayer::hard_sigmoid)},
        {"efficientnet_b0", MobileNetOptions({{"ds_r1_k3_s1_e1_c16_se0.25"},
                                              {"ir_r2_k3_s2_e6_c24_se0.25"},
                                              {"ir_r2_k5_s2_e6_c40_se0.25"},
                                              {"ir_r3_k3_s2_e6_c80_se0.25"},
                                              {"ir_r3_k5_s1_e6_c112_se0.25"},
                                              {"ir_r4_k5_s2_e6_c192_se0.25"},
                                              {"ir_r1_k3_s1_e6_c320_se0.25"}})},
        {"efficientnet_cc_b0_4e", MobileNetOptions({{"ds_r1_k3_s1_e1_c16_se0.25"},
                                                    {"ir_r2_k3_s2_e6_c24_se0.25"},
                                                    {"ir_r2_k5_s2_e6_c40_se0.25"},
                                                    {"ir_r3_k3_s2_e6_c80_se0.25"},
                                                    {"ir_r3_k5_s1_e6_c112_se0.25_cc4"},
                                                    {"ir_r4_k5_s2_e6_c192_se0.25_cc4"},
                                                    {"ir_r1_k3_s1_e6_c320_se0.25_cc4"}})},
    };
    for (const auto& [name, options] : mobiles) {
      out.push_back(
          {name, "classifier.weight", [name = name, options = options](std::int64_t num_classes) {
             MobileNetOptions o = options;
             o.model_name(name).num_classes(num_classes);
             if (o.head() == MobileHead::mobilenetv3) {
               return std::shared_ptr<Network>(std::make_shared<MobileNetV3>(o));
             }
             return std::shared_ptr<Network>(std::make_shared<EfficientNet>(o));
           }});
    }

    // --- swin: entries of this family ---
    // models/resnest.py: deep stem of width 32, average-pool downsampling, avd.
    auto resnest = [](std::vector<std::int64_t> layers, std::int64_t radix, bool avd_first) {
      return ResNetOptions(B::resnest_bottleneck, std::move(layers))
          .stem_width(32)
          .stem_type(StemType::deep)
          .avg_down(true)
          .radix(radix)
          .avd(true)
          .avd_first(avd_first);
    };
    const std::vector<std::pair<std::string, ResNetOptions>> resnests = {
        {"resnest14d", resnest({1, 1, 1, 1}, 2, false)},
        {"resnest26d", resnest({2, 2, 2, 2}, 2, false)},
        {"resnest50d", resnest({3, 4, 6, 3}, 2, false)},
        {"resnest50d_4s2x40d", resnest({3, 4, 6, 3}, 4, true).base_width(40).cardinality(2)},
        {"resnest50d_1s4x24d", resnest({3, 4, 6, 3}, 1, true).base_width(24).cardinality(4)},
    };
    for (const auto& [name, options] : resnests) {
      out.push_back({name, "fc.weight", resnet(name, options)});
    }
    // models/swin_transformer.py: patch 4, window 7 at 224.
    const std::vector<std::pair<std::string, SwinTransformerOptions>> swins = {
        {"swin_tiny_patch4_window7_224", SwinTransformerOptions()},
    };
    for (const auto& [name, options] : swins) {
      out.push_back(
          {name, "head.fc.weight", [name = name, options = options](std::int64_t num_classes) {
             SwinTransformerOptions o = options;
             return std::shared_ptr<Network>(
                 std::make_shared<SwinTransformer>(o.model_name(name).num_classes(num_classes)));
           }});
    }

    // --- byob: entries of this family ---
    // models/byoanet.py: ByobNet with self-attention in the last two stages.
    for (const char* name : {"botnet26t_256", "halonet26t", "lambda_resnet26t"}) {
      out.push_back({name, "head.fc.weight", [name = std::string(name)](std::int64_t num_classes) {
                       return std::shared_ptr<Network>(std::make_shared<ByobNet>(
                           byoanet_options(name).num_classes(num_classes)));
                     }});
    }

    return out;
  }();
  return entries;
}

const Entry& find(const std::string& model_name, const char* where) {
  for (const Entry& e : registry()) {
    if (e.name == model_name) return e;
  }
  std::string names;
  for (const Entry& e : registry()) names += (names.empty() ? "" : ", ") + e.name;
  throw ValueError(std::string(where) + ": unknown model_name '" + model_name +
                   "' (supported: " + names + ")");
}

}  // namespace

const std::vector<std::string>& supported_models() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Entry& e : registry()) out.push_back(e.name);
    return out;
  }();
  return names;
}

std::shared_ptr<Network> build(const std::string& model_name, std::int64_t num_classes) {
  const Entry& e = find(model_name, "models::build");
  CVATTN_CHECK(num_classes >= 1, ValueError, "models::build('", model_name,
               "'): num_classes must be >= 1, got ", num_classes);
  return e.build(num_classes);
}

std::shared_ptr<Network> create(const std::string& model_name, const StateDict& state_dict) {
  const Entry& e = find(model_name, "models::create");
  const StateDict::Entry* fc = state_dict.find(e.classifier);
  CVATTN_CHECK(fc != nullptr, ValueError, "models::create('", model_name,
               "'): the state_dict has no classifier weight '", e.classifier, "' (",
               state_dict.size(), " keys); is it a ", model_name, " state_dict?");
  CVATTN_CHECK(fc->value.rank() == 2 && fc->value.dim(0) >= 1 && !fc->integer, ValueError,
               "models::create('", model_name, "'): '", e.classifier,
               "' expected [num_classes, features], got ", cvattn::to_string(fc->value.shape()));
  std::shared_ptr<Network> net = e.build(fc->value.dim(0));
  try {
    net->load_state_dict(state_dict, Strict::yes);
  } catch (const ValueError& err) {
    throw ValueError("models::create('" + model_name + "'): " + err.what());
  }
  return net;
}

}  // namespace cvattn::models

#include <memory>
#include <string>

#include "cvattn/core/error.hpp"
#include "cvattn/models/timm.hpp"
#include "cvattn/models/vision_transformer.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec timm_model() {
  return {
      "timm_model",
      "timm.create_model(model_name, pretrained=False) in eval(); num_classes from the "
      "classifier's weights (supported: see --set model_name)",
      {{"input", "[N,3,H,W]"}},
      true,
      {{"model_name", SettingType::word, "", "timm's model name", models::supported_models()},
       {"head_fusion",
        SettingType::word,
        "mean",
        "rollout: fuse heads by mean, max or min",
        {"mean", "max", "min"}},
       {"discard_ratio", SettingType::real, "0", "rollout: share of smallest entries zeroed"}},
      {{"output", "[N,num_classes]"},
       {"features", "[N,num_features]"},
       {"cam", "[N,h,w] (global-pool + linear heads)"},
       {"rollout", "[N,gh,gw] (ViT family)"},
       {"<path>", "any attention map by module path, e.g. layer1.0.se.attention"}},
      [](const Invocation& inv) -> Computation {
        const std::string name = inv.settings.word("model_name");
        std::shared_ptr<const models::Network> net = models::create(name, *inv.weights);
        const Tensor input = inv.input("input");
        const functional::HeadFusion fusion =
            functional::parse_head_fusion(inv.settings.word("head_fusion"));
        const double discard = inv.settings.real("discard_ratio");
        CVATTN_CHECK(discard >= 0.0 && discard < 1.0, ValueError,
                     "timm_model: discard_ratio must be in [0, 1), got ", discard);
        return [net, input, fusion, discard] {
          models::NetworkOutput r = net->run(input, true);
          Outputs out{{"output", r.logits}, {models::kFeatures, r.features}};
          if (net->has_class_activation_map()) {
            out.emplace(models::kCam, net->class_activation_map(r));
          }
          if (net->has_rollout()) out.emplace(models::kRollout, net->rollout(r, fusion, discard));
          for (const auto& [path, map] : r.maps.items()) out.emplace(path, map);
          return out;
        };
      },
  };
}

}  // namespace cvattn::cli::ops

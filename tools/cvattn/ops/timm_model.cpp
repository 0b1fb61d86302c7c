#include <memory>
#include <string>

#include "cvattn/models/timm.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec timm_model() {
  return {
      "timm_model",
      "timm.create_model(model_name, pretrained=False) in eval(); num_classes from the "
      "classifier's weights (supported: see --set model_name)",
      {{"input", "[N,3,H,W]"}},
      true,
      {{"model_name", SettingType::word, "", "timm's model name", models::supported_models()}},
      {{"output", "[N,num_classes]"},
       {"features", "[N,num_features]"},
       {"cam", "[N,h,w]"},
       {"<path>", "any attention map by module path, e.g. layer1.0.se.attention"}},
      [](const Invocation& inv) -> Computation {
        const std::string name = inv.settings.word("model_name");
        std::shared_ptr<const models::Network> net = models::create(name, *inv.weights);
        const Tensor input = inv.input("input");
        return [net, input] {
          models::NetworkOutput r = net->run(input, true);
          Outputs out{{"output", r.logits}, {models::kFeatures, r.features}};
          if (net->has_class_activation_map()) {
            out.emplace(models::kCam, net->class_activation_map(r));
          }
          for (const auto& [path, map] : r.maps.items()) out.emplace(path, map);
          return out;
        };
      },
  };
}

}  // namespace cvattn::cli::ops

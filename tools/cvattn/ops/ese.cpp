#include <memory>

#include "cvattn/modules/effective_se.hpp"
#include "ops/gates_common.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec ese() {
  return {
      "ese",
      "timm EffectiveSEModule (C from the weights)",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"add_maxpool", SettingType::boolean, "false", "pool 0.5 * mean + 0.5 * max"},
       gates::gate_layer_setting("hard_sigmoid")},
      {{"output", "[N,C,H,W]"}, {"attention", "[N,C]"}},
      [](const Invocation& inv) -> Computation {
        const auto options = EffectiveSqueezeExcitationOptions::from_state_dict(*inv.weights)
                                 .add_maxpool(inv.settings.boolean("add_maxpool"))
                                 .gate_layer(gates::gate_layer(inv));
        auto module = std::make_shared<EffectiveSqueezeExcitation>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.channels(), kAny, kAny}, "input", "ese");
        return gates::with_maps(inv, module, input, {maps::kAttention});
      },
  };
}

}  // namespace cvattn::cli::ops

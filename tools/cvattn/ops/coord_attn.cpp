#include "cvattn/modules/coord_attn.hpp"

#include <memory>

#include "ops/gates_common.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec coord_attn() {
  return {
      "coord_attn",
      "timm CoordAttn (C, R, bias and bn1 from the weights)",
      {{"input", "[N,C,H,W]"}},
      true,
      {{"act_layer", SettingType::word, "hard_swish",
        "activation after conv1 and bn1 (timm's names: relu, silu, gelu, hard_swish, ...)"},
       gates::gate_layer_setting("sigmoid"),
       {"has_skip", SettingType::boolean, "false", "add the input to the output"}},
      {{"output", "[N,C,H,W]"}, {"attention_h", "[N,C,H]"}, {"attention_w", "[N,C,W]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        const auto options = CoordAttnOptions::from_state_dict(*inv.weights)
                                 .act_layer(parse_act_layer(s.word("act_layer")))
                                 .gate_layer(gates::gate_layer(inv))
                                 .has_skip(s.boolean("has_skip"));
        auto module = std::make_shared<CoordAttn>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.channels(), kAny, kAny}, "input", "coord_attn");
        return gates::with_maps(inv, module, input, {maps::kAttentionH, maps::kAttentionW});
      },
  };
}

}  // namespace cvattn::cli::ops

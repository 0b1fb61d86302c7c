#include <memory>

#include "cvattn/modules/light_cbam.hpp"
#include "ops/gates_common.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec lcbam() {
  return {
      "lcbam",
      "timm LightCbamModule (C, R, mlp_bias and the spatial kernel from the weights; both gates "
      "are sigmoids whatever gate_layer says, as in timm)",
      {{"input", "[N,C,H,W]"}},
      true,
      {gates::gate_layer_setting("sigmoid")},
      {{"output", "[N,C,H,W]"}, {"channel_attention", "[N,C]"}, {"spatial_attention", "[N,1,H,W]"}},
      [](const Invocation& inv) -> Computation {
        const auto options =
            LightCbamOptions::from_state_dict(*inv.weights).gate_layer(gates::gate_layer(inv));
        auto module = std::make_shared<LightCbam>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.channels(), kAny, kAny}, "input", "lcbam");
        return gates::with_maps(inv, module, input,
                                {maps::kChannelAttention, maps::kSpatialAttention});
      },
  };
}

}  // namespace cvattn::cli::ops

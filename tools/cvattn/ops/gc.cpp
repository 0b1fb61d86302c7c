#include <memory>

#include "cvattn/modules/global_context.hpp"
#include "ops/gates_common.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec gc() {
  return {
      "gc",
      "timm GlobalContext (use_attn, fuse_add, fuse_scale, C and R from the weights)",
      {{"input", "[N,C,H,W]"}},
      true,
      {gates::gate_layer_setting("sigmoid")},
      {{"output", "[N,C,H,W]"}, {"attention", "[N,1,H,W]"}, {"channel_attention", "[N,C]"}},
      [](const Invocation& inv) -> Computation {
        const auto options =
            GlobalContextOptions::from_state_dict(*inv.weights).gate_layer(gates::gate_layer(inv));
        auto module = std::make_shared<GlobalContext>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, options.channels(), kAny, kAny}, "input", "gc");
        return gates::with_maps(inv, module, input, {maps::kAttention, maps::kChannelAttention});
      },
  };
}

}  // namespace cvattn::cli::ops

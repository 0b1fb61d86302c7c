#include "cvattn/modules/ceca.hpp"

#include <memory>

#include "ops/gates_common.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec ceca() {
  return {
      "ceca",
      "timm CecaModule (circular padding; kernel size and bias from the weights, any C)",
      {{"input", "[N,C,H,W]"}},
      true,
      {gates::gate_layer_setting("sigmoid")},
      {{"output", "[N,C,H,W]"}, {"attention", "[N,C]"}},
      [](const Invocation& inv) -> Computation {
        const auto options =
            CecaOptions::from_state_dict(*inv.weights).gate_layer(gates::gate_layer(inv));
        auto module = std::make_shared<Ceca>(options);
        module->load_state_dict(*inv.weights);
        const Tensor input = inv.input("input");
        check_rank(input, 4, "input", "ceca");
        return gates::with_maps(inv, module, input, {maps::kAttention});
      },
  };
}

}  // namespace cvattn::cli::ops

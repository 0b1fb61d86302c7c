#include "cvattn/modules/eca.hpp"

#include <memory>

#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec eca() {
  return {
      "eca",
      "timm EcaModule (sigmoid gate; kernel size and the use_mlp variant from the weights, any C)",
      {{"input", "[N,C,H,W]"}},
      true,
      {},
      {{"output", "[N,C,H,W]"}, {"attention", "[N,C]"}},
      [](const Invocation& inv) -> Computation {
        const StateDict& weights = *inv.weights;
        auto module = std::make_shared<Eca>(EcaOptions::from_state_dict(weights));
        module->load_state_dict(weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, kAny, kAny, kAny}, "input", "eca");
        return [module, input] {
          Attended r = module->forward_with_maps(input);
          return Outputs{{"output", r.output}, {"attention", r.maps.at(maps::kAttention)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops

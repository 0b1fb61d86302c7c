#include <memory>

#include "cvattn/modules/squeeze_excitation.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec se() {
  return {
      "se",
      "timm SEModule (ReLU, sigmoid gate; C, R, biases and an optional bn.* norm from the weights)",
      {{"input", "[N,C,H,W]"}},
      true,
      {},
      {{"output", "[N,C,H,W]"}, {"attention", "[N,C]"}},
      [](const Invocation& inv) -> Computation {
        const StateDict& weights = *inv.weights;
        auto module =
            std::make_shared<SqueezeExcitation>(SqueezeExcitationOptions::from_state_dict(weights));
        module->load_state_dict(weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, module->options().channels(), kAny, kAny}, "input", "se");
        return [module, input] {
          Attended r = module->forward_with_maps(input);
          return Outputs{{"output", r.output}, {"attention", r.maps.at(maps::kAttention)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops

#include <memory>

#include "cvattn/modules/non_local.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec nonlocal() {
  return {
      "nonlocal",
      "timm NonLocalAttn (use_scale=True; C and R from the weights; BatchNorm in inference mode)",
      {{"input", "[N,C,H,W]"}},
      true,
      {},
      {{"output", "[N,C,H,W]"}, {"attention", "[N,H*W,H*W]"}},
      [](const Invocation& inv) -> Computation {
        const StateDict& weights = *inv.weights;
        auto module = std::make_shared<NonLocalAttn>(NonLocalAttnOptions::from_state_dict(weights));
        module->load_state_dict(weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, module->options().in_channels(), kAny, kAny}, "input",
                    "nonlocal");
        return [module, input] {
          Attended r = module->forward_with_maps(input);
          return Outputs{{"output", r.output}, {"attention", r.maps.at(maps::kAttention)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops

#include "cvattn/modules/cbam.hpp"

#include <memory>

#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec cbam() {
  return {
      "cbam",
      "timm CbamModule (sigmoid gates; C, R, mlp_bias and the spatial kernel from the weights)",
      {{"input", "[N,C,H,W]"}},
      true,
      {},
      {{"output", "[N,C,H,W]"}, {"channel_attention", "[N,C]"}, {"spatial_attention", "[N,1,H,W]"}},
      [](const Invocation& inv) -> Computation {
        const StateDict& weights = *inv.weights;
        auto module = std::make_shared<Cbam>(CbamOptions::from_state_dict(weights));
        module->load_state_dict(weights);
        const Tensor input = inv.input("input");
        check_shape(input, {kAny, module->options().channels(), kAny, kAny}, "input", "cbam");
        return [module, input] {
          Attended r = module->forward_with_maps(input);
          return Outputs{{"output", r.output},
                         {"channel_attention", r.maps.at(maps::kChannelAttention)},
                         {"spatial_attention", r.maps.at(maps::kSpatialAttention)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops

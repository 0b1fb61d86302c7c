#include <memory>

#include "cvattn/modules/spatial_transformer.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec stn() {
  return {
      "stn",
      "PyTorch spatial-transformer tutorial Net.stn (and Net.forward for logits when the weights "
      "hold the whole Net)",
      {{"input", "[N,1,28,28]"}},
      true,
      {},
      {{"output", "[N,1,H,W]"},
       {"theta", "[N,2,3]"},
       {"grid", "[N,H,W,2]"},
       {"logits", "[N,10] (whole-Net weights only)"}},
      [](const Invocation& inv) -> Computation {
        const StateDict& weights = *inv.weights;
        const Tensor input = inv.input("input");
        if (StnClassifier::has_classifier_keys(weights)) {
          auto net = StnClassifier::from_state_dict(weights);
          return [net, input] {
            Attended r = net->forward_with_maps(input);
            return Outputs{{"output", r.maps.at("output")},
                           {"theta", r.maps.at(maps::kTheta)},
                           {"grid", r.maps.at(maps::kGrid)},
                           {"logits", r.output}};
          };
        }
        auto stn = SpatialTransformer::from_state_dict(weights);
        // No classifier: "logits" stays absent, so asking for it is an input error.
        return [stn, input] {
          Attended r = stn->forward_with_maps(input);
          return Outputs{{"output", r.output},
                         {"theta", r.maps.at(maps::kTheta)},
                         {"grid", r.maps.at(maps::kGrid)}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops

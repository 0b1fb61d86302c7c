#include "cvattn/models/network.hpp"

#include "cvattn/core/error.hpp"

namespace cvattn::models {

Tensor Network::forward(const Tensor& x) const { return run(x, false).logits; }

Attended Network::forward_with_maps(const Tensor& x) const {
  NetworkOutput out = run(x, true);
  return {out.logits, out.maps};
}

Tensor Network::class_activation_map(const NetworkOutput& /*out*/,
                                     std::int64_t /*class_index*/) const {
  throw ValueError(model_name() +
                   ": no class activation map (the head is not global average pooling + one "
                   "linear layer)");
}

}  // namespace cvattn::models

#include "cvattn/models/network.hpp"

#include "cvattn/core/error.hpp"
#include "models/detail/maps.hpp"

namespace cvattn::models {

void BlockList::push_back(std::shared_ptr<MappedModule> block) {
  CVATTN_CHECK(block != nullptr, ValueError, "BlockList::push_back: null block");
  register_module(std::to_string(blocks_.size()), block);
  blocks_.push_back(std::move(block));
}

Attended BlockList::run(const Tensor& x, bool keep_maps) const {
  Attended out{x, {}};
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    if (!keep_maps) {
      out.output = blocks_[i]->forward(out.output);
      continue;
    }
    Attended b = blocks_[i]->forward_with_maps(out.output);
    out.output = b.output;
    detail::add_prefixed(out.maps, std::to_string(i), b.maps);
  }
  return out;
}

Tensor Network::forward(const Tensor& x) const { return run(x, false).logits; }

Attended Network::forward_with_maps(const Tensor& x) const {
  NetworkOutput out = run(x, true);
  return {out.logits, out.maps};
}

Tensor Network::class_activation_map(const NetworkOutput& out, std::int64_t class_index) const {
  const Tensor weight = cam_weight();
  if (!weight.defined()) {
    throw ValueError(model_name() +
                     ": no class activation map (the head is not global average pooling + one "
                     "linear layer)");
  }
  return functional::class_activation_map(out.feature_map, weight, out.logits, class_index);
}

Tensor Network::rollout(const NetworkOutput& /*out*/, functional::HeadFusion /*head_fusion*/,
                        double /*discard_ratio*/) const {
  throw ValueError(model_name() + ": no attention rollout (not a ViT-family network)");
}

}  // namespace cvattn::models

#pragma once
// models::create: a whole timm network from its model name and state_dict, as
// timm.create_model(model_name, pretrained=False) builds it (num_classes read off the
// classifier's weight), the state_dict loaded unchanged and strictly.
//
//   const StateDict dict = io::load_safetensors("seresnet18.safetensors");
//   auto net = models::create("seresnet18", dict);
//   models::NetworkOutput out = net->run(x);     // logits, features, maps by path
//   Tensor cam = net->class_activation_map(out);
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cvattn/core/state_dict.hpp"
#include "cvattn/export.hpp"
#include "cvattn/models/network.hpp"

namespace cvattn::models {

// The model names create() accepts, in a fixed order.
[[nodiscard]] CVATTN_EXPORT const std::vector<std::string>& supported_models();

// The architecture of model_name with num_classes outputs and zero weights (BatchNorms fresh).
// ValueError naming the supported models on an unknown name.
[[nodiscard]] CVATTN_EXPORT std::shared_ptr<Network> build(const std::string& model_name,
                                                           std::int64_t num_classes = 1000);

// build() with num_classes from the classifier weight ("fc.weight" [num_classes, C]), then
// load_state_dict(state_dict, Strict::yes). ValueError on an unknown name, a missing classifier
// weight, and any missing, unexpected or mis-shaped key (all named in one message).
[[nodiscard]] CVATTN_EXPORT std::shared_ptr<Network> create(const std::string& model_name,
                                                            const StateDict& state_dict);

}  // namespace cvattn::models

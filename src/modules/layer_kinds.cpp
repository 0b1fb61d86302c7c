#include "cvattn/modules/layer_kinds.hpp"

#include "cvattn/core/error.hpp"

namespace cvattn {

GateLayer parse_gate_layer(const std::string& word) {
  if (word == "sigmoid") return GateLayer::sigmoid;
  if (word == "hard_sigmoid") return GateLayer::hard_sigmoid;
  if (word == "tanh") return GateLayer::tanh;
  throw ValueError("parse_gate_layer: unknown gate_layer '" + word +
                   "' (expected sigmoid, hard_sigmoid or tanh)");
}

const char* to_string(GateLayer gate) {
  if (gate == GateLayer::tanh) return "tanh";
  return gate == GateLayer::sigmoid ? "sigmoid" : "hard_sigmoid";
}

NormLayer parse_norm_layer(const std::string& word) {
  if (word == "none") return NormLayer::none;
  if (word == "batch_norm") return NormLayer::batch_norm;
  throw ValueError("parse_norm_layer: unknown norm_layer '" + word +
                   "' (expected none or batch_norm)");
}

const char* to_string(NormLayer norm) { return norm == NormLayer::none ? "none" : "batch_norm"; }

}  // namespace cvattn

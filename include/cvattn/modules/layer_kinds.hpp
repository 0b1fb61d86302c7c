#pragma once
// The activation and norm choices timm's channel-attention modules accept by name
// (gate_layer='sigmoid', norm_layer=nn.BatchNorm2d).
#include <string>

#include "cvattn/export.hpp"
#include "cvattn/functional/activation.hpp"  // ActLayer, parse_act_layer, to_string(ActLayer)

namespace cvattn {

// The gate applied to attention logits: sigmoid 1/(1+exp(-x)), or hard_sigmoid
// min(max(x+3, 0), 6)/6 (torch.nn.Hardsigmoid, what timm's 'hard_sigmoid' creates).
enum class GateLayer { sigmoid, hard_sigmoid };
// "sigmoid" / "hard_sigmoid"; ValueError on any other word.
[[nodiscard]] CVATTN_EXPORT GateLayer parse_gate_layer(const std::string& word);
[[nodiscard]] CVATTN_EXPORT const char* to_string(GateLayer gate);

// An optional normalisation inside a module: none (timm's None / Identity) or an inference-mode
// BatchNorm2d (eps 1e-5, running statistics).
enum class NormLayer { none, batch_norm };
// "none" / "batch_norm"; ValueError on any other word.
[[nodiscard]] CVATTN_EXPORT NormLayer parse_norm_layer(const std::string& word);
[[nodiscard]] CVATTN_EXPORT const char* to_string(NormLayer norm);

}  // namespace cvattn

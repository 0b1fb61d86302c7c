#pragma once
// Channel-attention gates as stateless functions: squeeze-and-excitation (timm SEModule), ECA
// (timm EcaModule) and CBAM (timm CbamModule). Each pools x [N, C, H, W] per channel, turns the
// pooled vector into a gate in (0, 1) and returns y = x * gate together with the gate, in one
// fused pass per sample (a read to pool, a read and a write to scale). The modules
// (SqueezeExcitation, Eca, Cbam) own the weights and call these.
//
// Weights are given as the modules hold them; 1x1 conv weights may be [O, I, 1, 1] or [O, I].
// Optional tensors are left undefined. ShapeError / ValueError name the function and the tensor.
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/layer_kinds.hpp"

namespace cvattn::functional {

// y = x * gate, gate [N, C] (the attention map).
struct ChannelGated {
  Tensor output;
  Tensor gate;
};

struct SqueezeExcitationWeights {
  Tensor fc1_weight;  // [R, C] (R >= 1)
  Tensor fc1_bias;    // [R] or undefined
  Tensor fc2_weight;  // [C, R]
  Tensor fc2_bias;    // [C] or undefined
  // An inference BatchNorm between fc1 and the ReLU (eps 1e-5): all four [R], or all undefined.
  Tensor bn_weight, bn_bias, bn_mean, bn_var;
};

// timm SEModule: p = mean_hw x (with add_maxpool: 0.5 * mean + 0.5 * amax), then
// gate = gate_layer(fc2(relu(bn(fc1(p))))). x [N, C, H, W] with H, W >= 1.
[[nodiscard]] CVATTN_EXPORT ChannelGated
squeeze_excitation(const Tensor& x, const SqueezeExcitationWeights& weights,
                   bool add_maxpool = false, GateLayer gate_layer = GateLayer::sigmoid);

struct EcaWeights {
  // Without an MLP: conv_weight [1, 1, k] (k odd), the conv1d over the pooled channels.
  // With the MLP (timm use_mlp): conv_weight [R, 1, 1], conv_bias [R], conv2_weight [1, R, k],
  // conv2_bias [1].
  Tensor conv_weight, conv_bias, conv2_weight, conv2_bias;
};

// timm EcaModule: p = mean_hw x, gate = gate_layer(conv1d(p, padding (k-1)/2)) (with the MLP:
// conv2(relu(conv(p)))). x [N, C, H, W] with H, W >= 1.
[[nodiscard]] CVATTN_EXPORT ChannelGated efficient_channel_attention(
    const Tensor& x, const EcaWeights& weights, GateLayer gate_layer = GateLayer::sigmoid);

struct CbamWeights {
  Tensor fc1_weight;      // [R, C]
  Tensor fc1_bias;        // [R] or undefined
  Tensor fc2_weight;      // [C, R]
  Tensor fc2_bias;        // [C] or undefined
  Tensor spatial_weight;  // [1, 2, k, k], k odd, no bias
  // The spatial conv's inference BatchNorm (eps 1e-5), [1] each.
  Tensor bn_weight, bn_bias, bn_mean, bn_var;
};

struct CbamGated {
  Tensor output;
  Tensor channel_gate;  // [N, C]
  Tensor spatial_gate;  // [N, 1, H, W]
};

// timm CbamModule: channel gate g = gate_layer(mlp(mean_hw x) + mlp(amax_hw x)), then on
// v = x * g the spatial gate s = gate_layer(bn(conv([mean_c v, amax_c v]))), y = v * s.
[[nodiscard]] CVATTN_EXPORT CbamGated cbam(const Tensor& x, const CbamWeights& weights,
                                           GateLayer gate_layer = GateLayer::sigmoid);

}  // namespace cvattn::functional

#pragma once
// Ceca: timm's CecaModule (layers/eca.py; alias CircularEfficientChannelAttn), ECA with a
// circularly padded channel conv (docs/gates.md):
//
//   s = mean_hw(x)                            viewed as a 1-channel signal of length C
//   g = gate(conv1d(pad_circular(s, p)))      k taps, p = (k - 1) / 2, bias only with act_layer
//   y = x * g                                 g exposed as map "attention" [N, C]
//
// Kernel size as EcaModule: from channels (t = trunc(|log2(C) + beta| / gamma), odd, >= 3)
// when channels is given, else kernel_size. timm's act_layer only adds conv.bias (the
// activation itself is never applied), so here it is the switch `bias`. Circular padding needs
// p <= C (F.pad wraps around at most once).
// state_dict keys: conv.weight [1, 1, k], conv.bias [1] (bias only).
#include <cstdint>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/layer_kinds.hpp"

namespace cvattn {

class CVATTN_EXPORT CecaOptions {
 public:
  // channels 0 means timm's channels=None: kernel_size is used as given, any C is accepted.
  explicit CecaOptions(std::int64_t channels = 0) : channels_(channels) {}

  // k from `<prefix>conv.weight` [1, 1, k] (channels stays 0), bias from `<prefix>conv.bias`.
  // ValueError naming the key on a missing or malformed tensor.
  [[nodiscard]] static CecaOptions from_state_dict(const StateDict& dict,
                                                   const std::string& prefix = "");
  // The kernel size the module uses. ValueError on invalid options.
  [[nodiscard]] std::int64_t effective_kernel_size() const;

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(std::int64_t, kernel_size) = 3;
  CVATTN_ARG(double, gamma) = 2.0;
  CVATTN_ARG(double, beta) = 1.0;
  CVATTN_ARG(bool, bias) = false;  // timm: act_layer is not None
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::sigmoid;
};

class CVATTN_EXPORT Ceca final : public UnaryModule {
 public:
  explicit Ceca(const CecaOptions& options = CecaOptions());

  // x [N, C, H, W], H, W >= 1, (k - 1) / 2 <= C -> y of that shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, C].
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const CecaOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t kernel_size() const noexcept { return k_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  CecaOptions options_;
  std::int64_t k_;
  Tensor conv_weight_, conv_bias_;
};

}  // namespace cvattn

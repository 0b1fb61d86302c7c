#pragma once
// EffectiveSqueezeExcitation: timm's EffectiveSEModule (layers/squeeze_excite.py), CenterMask's
// "effective SE" (docs/gates.md):
//
//   s = mean_hw(x)                  (add_maxpool: 0.5 * mean + 0.5 * amax)
//   g = gate(fc(s))                 fc: C -> C, a 1x1 conv with bias; gate hard_sigmoid by default
//   y = x * g                       g exposed as map "attention" [N, C]
//
// state_dict keys: fc.weight [C, C, 1, 1], fc.bias [C].
#include <cstdint>
#include <memory>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/modules/conv2d.hpp"
#include "cvattn/modules/layer_kinds.hpp"

namespace cvattn {

class CVATTN_EXPORT EffectiveSqueezeExcitationOptions {
 public:
  explicit EffectiveSqueezeExcitationOptions(std::int64_t channels) : channels_(channels) {}

  // C from `<prefix>fc.weight` [C, C, 1, 1]; add_maxpool and gate_layer leave no trace in the
  // weights and keep their defaults. ValueError naming the key when it is missing or malformed.
  [[nodiscard]] static EffectiveSqueezeExcitationOptions from_state_dict(
      const StateDict& dict, const std::string& prefix = "");

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(bool, add_maxpool) = false;
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::hard_sigmoid;
};

class CVATTN_EXPORT EffectiveSqueezeExcitation final : public UnaryModule {
 public:
  // Parameters start at zero; load them with load_state_dict. ValueError when channels < 1.
  explicit EffectiveSqueezeExcitation(const EffectiveSqueezeExcitationOptions& options);

  // x [N, C, H, W] with H, W >= 1 -> y of that shape. ShapeError on any other shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, C] (the gate g).
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const EffectiveSqueezeExcitationOptions& options() const noexcept {
    return options_;
  }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  EffectiveSqueezeExcitationOptions options_;
  std::shared_ptr<Conv2d> fc_;
};

}  // namespace cvattn

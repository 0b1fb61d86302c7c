#pragma once
// Eca: timm's EcaModule (layers/eca.py), Efficient Channel Attention, docs/modules.md §3.
//
//   s = mean_hw(x)                            viewed as a 1-channel signal of length C
//   g = gate(conv1d(s))                       k taps, zero padding (k-1)/2, no bias
//   y = x * g                                 g exposed as map "attention" [N, C]
// use_mlp (a timm experiment): g = gate(conv2(ReLU(conv(s)))), conv: 1 -> R (k=1, bias),
// conv2: R -> 1 (k taps, bias).
//
// Kernel size: with channels given, k = t if t odd else t + 1, k = max(k, 3), where
// t = trunc(|log2(C) + beta| / gamma) (kernel_size is then ignored, as in timm); with
// channels == 0 (timm's None), k = kernel_size and any C is accepted.
// state_dict keys: conv.weight [1, 1, k]; use_mlp: conv.weight [R, 1, 1], conv.bias [R],
// conv2.weight [1, R, k], conv2.bias [1].
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

class CVATTN_EXPORT EcaOptions {
 public:
  // channels 0 means timm's channels=None: kernel_size is used as given, any C is accepted.
  explicit EcaOptions(std::int64_t channels = 0) : channels_(channels) {}

  // k (and R for use_mlp) read off the weights: use_mlp from conv2.weight's presence, k from
  // conv.weight [1, 1, k] or conv2.weight [1, R, k]. channels stays 0 (C is not in the weights).
  // ValueError naming the key on a missing or malformed tensor.
  [[nodiscard]] static EcaOptions from_state_dict(const StateDict& dict,
                                                  const std::string& prefix = "");

  // The kernel size the module uses (see above). ValueError on invalid options.
  [[nodiscard]] std::int64_t effective_kernel_size() const;
  // R for use_mlp: rd_channels if non-zero, else make_divisible(channels * rd_ratio,
  // rd_divisor) (round_limit 0.9). ValueError when neither channels nor rd_channels is set.
  [[nodiscard]] std::int64_t reduced_channels() const;

  CVATTN_ARG(std::int64_t, channels);
  CVATTN_ARG(std::int64_t, kernel_size) = 3;
  CVATTN_ARG(double, gamma) = 2.0;
  CVATTN_ARG(double, beta) = 1.0;
  CVATTN_ARG(GateLayer, gate_layer) = GateLayer::sigmoid;
  CVATTN_ARG(double, rd_ratio) = 1.0 / 8.0;
  CVATTN_ARG(std::int64_t, rd_channels) = 0;  // 0: computed (timm's None)
  CVATTN_ARG(std::int64_t, rd_divisor) = 8;
  CVATTN_ARG(bool, use_mlp) = false;
};

class CVATTN_EXPORT Eca final : public UnaryModule {
 public:
  // Parameters start at zero; load them with load_state_dict. ValueError on invalid options.
  explicit Eca(const EcaOptions& options = EcaOptions());

  // x [N, C, H, W] with H, W >= 1 (C = channels when channels was given) -> y of that shape.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus maps "attention" [N, C] (the gate g).
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const EcaOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t kernel_size() const noexcept { return k_; }

 private:
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;

  EcaOptions options_;
  std::int64_t k_;
  std::int64_t rd_ = 0;  // use_mlp only
  Tensor conv_weight_, conv_bias_, conv2_weight_, conv2_bias_;
};

}  // namespace cvattn

#pragma once
// Conv2d: torch.nn.Conv2d (zero padding) with state_dict keys `weight` [out, in/groups, kh, kw]
// and `bias` [out] (absent when bias=false).
#include <cstdint>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/conv.hpp"

namespace cvattn {

struct CVATTN_EXPORT Conv2dOptions {
  Conv2dOptions(std::int64_t in_channels, std::int64_t out_channels, Pair2 kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, out_channels);
  CVATTN_ARG(Pair2, kernel_size);
  CVATTN_ARG(Pair2, stride) = Pair2(1);
  CVATTN_ARG(Pair2, padding) = Pair2(0);
  CVATTN_ARG(Pair2, dilation) = Pair2(1);
  CVATTN_ARG(std::int64_t, groups) = 1;
  CVATTN_ARG(bool, bias) = true;

 public:
  // Channels and kernel size from `<prefix>weight`, bias from whether `<prefix>bias` exists.
  // Stride, padding and dilation cannot be inferred and stay at their defaults; groups must be
  // given because the weight only holds in_channels / groups.
  [[nodiscard]] static Conv2dOptions from_state_dict(const StateDict& dict,
                                                     const std::string& prefix = "",
                                                     std::int64_t groups = 1);
};

class CVATTN_EXPORT Conv2d final : public UnaryModule {
 public:
  // ValueError on non-positive sizes or groups that do not divide both channel counts.
  explicit Conv2d(const Conv2dOptions& options);

  // [N, in, H, W] (or [in, H, W]) -> [N, out, Ho, Wo]. After load_state_dict the weight's
  // Winograd transforms and packed copies are made once (functional::Conv2dWeight) and shared
  // by every call; values written into weight() in place after loading are not seen until the
  // next load_state_dict (core/module.hpp). Before any load, forward reads weight() as it is.
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)"
  [[nodiscard]] std::string describe() const override;

  [[nodiscard]] const Conv2dOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Tensor& weight() const noexcept { return weight_; }
  // Undefined when the module has no bias.
  [[nodiscard]] const Tensor& bias() const noexcept { return bias_; }

 private:
  void on_weights_loaded() override;

  Conv2dOptions options_;
  Tensor weight_;
  Tensor bias_;
  functional::Conv2dWeight prepared_;  // weight_ with the options, prepared at load
};

}  // namespace cvattn

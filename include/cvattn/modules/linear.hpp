#pragma once
// Linear: torch.nn.Linear with state_dict keys `weight` [out, in] and `bias` [out] (absent when
// bias=false).
#include <cstdint>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

struct CVATTN_EXPORT LinearOptions {
  LinearOptions(std::int64_t in_features, std::int64_t out_features)
      : in_features_(in_features), out_features_(out_features) {}
  CVATTN_ARG(std::int64_t, in_features);
  CVATTN_ARG(std::int64_t, out_features);
  CVATTN_ARG(bool, bias) = true;

 public:
  // Sizes from `<prefix>weight`, bias from whether `<prefix>bias` exists.
  [[nodiscard]] static LinearOptions from_state_dict(const StateDict& dict,
                                                     const std::string& prefix = "");
};

class CVATTN_EXPORT Linear final : public UnaryModule {
 public:
  explicit Linear(const LinearOptions& options);

  // [..., in] -> [..., out].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "Linear(in_features=20, out_features=30, bias=True)"
  [[nodiscard]] std::string describe() const override;

  [[nodiscard]] const LinearOptions& options() const noexcept { return options_; }
  [[nodiscard]] const Tensor& weight() const noexcept { return weight_; }
  [[nodiscard]] const Tensor& bias() const noexcept { return bias_; }

 private:
  LinearOptions options_;
  Tensor weight_;
  Tensor bias_;
};

}  // namespace cvattn

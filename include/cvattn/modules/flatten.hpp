#pragma once
// Flatten: torch.nn.Flatten, merging dimensions start_dim..end_dim (negative counts from the
// end) into one. No state_dict keys.
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT Flatten final : public UnaryModule {
 public:
  explicit Flatten(int start_dim = 1, int end_dim = -1);
  // [N, C, H, W] -> [N, C*H*W] by default. Returns a fresh tensor (never a view of x).
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // "Flatten(start_dim=1, end_dim=-1)"
  [[nodiscard]] std::string describe() const override;

 private:
  int start_dim_;
  int end_dim_;
};

}  // namespace cvattn

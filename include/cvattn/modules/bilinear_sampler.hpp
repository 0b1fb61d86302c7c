#pragma once
// BilinearSampler: the spatial transformer's differentiable sampler, input [N, C, H, W] + grid
// [N, Ho, Wo, 2] -> output [N, C, Ho, Wo] (F::grid_sample, PyTorch semantics), with its gradient;
// volumes [N, C, D, H, W] with grids [N, Do, Ho, Wo, 3] too (bilinear = trilinear, nearest).
// Named for the usual bilinear case; the options also select nearest or bicubic, the padding
// mode and align_corners. No parameters, no state_dict keys.
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/sampling.hpp"

namespace cvattn {

// mode (bilinear), padding_mode (zeros), align_corners (false): grid_sample's own options.
using BilinearSamplerOptions = functional::GridSampleOptions;

class CVATTN_EXPORT BilinearSampler final : public Module {
 public:
  explicit BilinearSampler(const BilinearSamplerOptions& options = {});

  // F::grid_sample(input, grid, options): ShapeError on mismatched batches or ranks.
  [[nodiscard]] Tensor forward(const Tensor& input, const Tensor& grid) const;
  // What autograd gives for forward(input, grid).backward(grad_output): grad_input and
  // grad_grid (F::grid_sample_backward).
  [[nodiscard]] functional::GridSampleGrads backward(const Tensor& input, const Tensor& grid,
                                                     const Tensor& grad_output) const;

  // "BilinearSampler(mode='bilinear', padding_mode='zeros', align_corners=False)"
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const BilinearSamplerOptions& options() const noexcept { return options_; }

 private:
  BilinearSamplerOptions options_;
};

}  // namespace cvattn

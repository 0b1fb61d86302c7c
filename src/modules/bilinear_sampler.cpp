#include "cvattn/modules/bilinear_sampler.hpp"

#include "modules/repr.hpp"

namespace cvattn {

namespace F = cvattn::functional;

BilinearSampler::BilinearSampler(const BilinearSamplerOptions& options) : options_(options) {}

Tensor BilinearSampler::forward(const Tensor& input, const Tensor& grid) const {
  return F::grid_sample(input, grid, options_);
}

F::GridSampleGrads BilinearSampler::backward(const Tensor& input, const Tensor& grid,
                                             const Tensor& grad_output) const {
  return F::grid_sample_backward(input, grid, grad_output, options_);
}

std::string BilinearSampler::describe() const {
  return std::string("BilinearSampler(mode='") + F::interpolation_name(options_.mode()) +
         "', padding_mode='" + F::padding_mode_name(options_.padding_mode()) +
         "', align_corners=" + detail::bool_repr(options_.align_corners()) + ")";
}

}  // namespace cvattn

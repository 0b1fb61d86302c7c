#pragma once
// AffineGridGenerator: the spatial transformer's grid generator, theta [N, 2, 3] -> sampling grid
// [N, Ho, Wo, 2] (F::affine_grid, PyTorch semantics), with its gradient for training-style use.
// No parameters, no state_dict keys.
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

struct CVATTN_EXPORT AffineGridGeneratorOptions {
  // The output lattice (Ho, Wo); a 0 part means "the sampled input's own size" (the tutorial's
  // same-size warp), and then forward needs the input's shape.
  CVATTN_ARG(Pair2, output_size) = Pair2(0);
  CVATTN_ARG(bool, align_corners) = false;
};

class CVATTN_EXPORT AffineGridGenerator final : public Module {
 public:
  // ValueError on a negative output size.
  explicit AffineGridGenerator(const AffineGridGeneratorOptions& options = {});

  // theta [N, 2, 3] -> grid [N, Ho, Wo, 2] for sampling an input of shape `input_size`
  // [N, C, H, W]: Ho, Wo from the options, or H, W where the option is 0.
  [[nodiscard]] Tensor forward(const Tensor& theta, const Shape& input_size) const;
  // The same with both output sizes set in the options; ValueError otherwise.
  [[nodiscard]] Tensor forward(const Tensor& theta) const;
  // Gradient with respect to theta: grad_grid [N, Ho, Wo, 2] -> grad_theta [N, 2, 3]
  // (F::affine_grid_backward; the lattice is grad_grid's own).
  [[nodiscard]] Tensor backward(const Tensor& grad_grid) const;

  // The lattice forward(theta, input_size) makes: {N, C, Ho, Wo}.
  [[nodiscard]] Shape output_shape(const Shape& input_size) const;
  // "AffineGridGenerator(output_size=(7, 5), align_corners=False)"; "input" for a 0 size.
  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const AffineGridGeneratorOptions& options() const noexcept { return options_; }

 private:
  AffineGridGeneratorOptions options_;
};

}  // namespace cvattn

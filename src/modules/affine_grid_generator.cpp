#include "cvattn/modules/affine_grid_generator.hpp"

#include "cvattn/core/error.hpp"
#include "cvattn/functional/sampling.hpp"
#include "modules/repr.hpp"

namespace cvattn {

AffineGridGenerator::AffineGridGenerator(const AffineGridGeneratorOptions& options)
    : options_(options) {
  const Pair2 s = options_.output_size();
  CVATTN_CHECK(s.h >= 0 && s.w >= 0, ValueError, "AffineGridGenerator: output_size ",
               detail::tuple_repr(s), " must not be negative (0 = the input's size)");
}

Shape AffineGridGenerator::output_shape(const Shape& input_size) const {
  CVATTN_CHECK(input_size.size() == 4, ShapeError,
               "AffineGridGenerator: input size expected [N, C, H, W], got ",
               to_string(input_size));
  const Pair2 s = options_.output_size();
  return {input_size[0], input_size[1], s.h > 0 ? s.h : input_size[2],
          s.w > 0 ? s.w : input_size[3]};
}

Tensor AffineGridGenerator::forward(const Tensor& theta, const Shape& input_size) const {
  return functional::affine_grid(theta, output_shape(input_size), options_.align_corners());
}

Tensor AffineGridGenerator::forward(const Tensor& theta) const {
  const Pair2 s = options_.output_size();
  CVATTN_CHECK(s.h > 0 && s.w > 0, ValueError, "AffineGridGenerator: output_size ",
               detail::tuple_repr(s),
               " has a 0 (input-sized) part; pass the input's shape to forward");
  const std::int64_t n = theta.rank() >= 1 ? theta.dim(0) : 0;
  return functional::affine_grid(theta, {n, 1, s.h, s.w}, options_.align_corners());
}

Tensor AffineGridGenerator::backward(const Tensor& grad_grid) const {
  check_defined(grad_grid, "grad_grid", "AffineGridGenerator::backward");
  check_shape(grad_grid, {kAny, kAny, kAny, 2}, "grad_grid", "AffineGridGenerator::backward");
  return functional::affine_grid_backward(grad_grid,
                                          {grad_grid.dim(0), 1, grad_grid.dim(1), grad_grid.dim(2)},
                                          options_.align_corners());
}

std::string AffineGridGenerator::describe() const {
  const Pair2 s = options_.output_size();
  const std::string size = s.h > 0 && s.w > 0 ? detail::tuple_repr(s) : "input";
  return "AffineGridGenerator(output_size=" + size +
         ", align_corners=" + detail::bool_repr(options_.align_corners()) + ")";
}

}  // namespace cvattn

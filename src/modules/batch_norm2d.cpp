#include "cvattn/modules/batch_norm2d.hpp"

#include <cmath>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "modules/repr.hpp"

namespace cvattn {

BatchNorm2dOptions BatchNorm2dOptions::from_state_dict(const StateDict& dict,
                                                       const std::string& prefix) {
  const std::string p = detail::key_prefix(prefix);
  const Tensor& mean = dict.at(p + "running_mean");
  CVATTN_CHECK(mean.rank() == 1, ShapeError, "BatchNorm2dOptions::from_state_dict: '", p,
               "running_mean' expected [C], got ", to_string(mean.shape()));
  return BatchNorm2dOptions(mean.dim(0)).affine(dict.contains(p + "weight"));
}

BatchNorm2d::BatchNorm2d(const BatchNorm2dOptions& options) : options_(options) {
  const std::int64_t c = options_.num_features();
  CVATTN_CHECK(c > 0, ValueError, "BatchNorm2dOptions: num_features must be positive, got ", c);
  CVATTN_CHECK(options_.eps() >= 0 && std::isfinite(options_.eps()), ValueError,
               "BatchNorm2dOptions: eps must be finite and non-negative, got ", options_.eps());
  if (options_.affine()) {
    weight_ = register_parameter("weight", {c});
    bias_ = register_parameter("bias", {c});
    weight_.fill(1.0f);
  }
  running_mean_ = register_buffer("running_mean", {c});
  running_var_ = register_buffer("running_var", {c});
  running_var_.fill(1.0f);
  register_buffer("num_batches_tracked", {}, /*integer=*/true);
}

Tensor BatchNorm2d::forward(const Tensor& x) const {
  check_shape(x, {kAny, options_.num_features(), kAny, kAny}, "x", "BatchNorm2d::forward");
  return functional::batch_norm(x, running_mean_, running_var_, weight_, bias_, options_.eps());
}

std::string BatchNorm2d::describe() const {
  return "BatchNorm2d(" + std::to_string(options_.num_features()) +
         ", eps=" + detail::float_repr(options_.eps()) +
         ", affine=" + detail::bool_repr(options_.affine()) + ")";
}

}  // namespace cvattn

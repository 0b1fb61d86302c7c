#include "cvattn/modules/linear.hpp"

#include "cvattn/core/error.hpp"
#include "cvattn/functional/linear.hpp"
#include "modules/repr.hpp"

namespace cvattn {

LinearOptions LinearOptions::from_state_dict(const StateDict& dict, const std::string& prefix) {
  const std::string key = detail::key_prefix(prefix) + "weight";
  const Tensor& w = dict.at(key);
  CVATTN_CHECK(w.rank() == 2, ShapeError, "LinearOptions::from_state_dict: '", key,
               "' expected [out, in], got ", to_string(w.shape()));
  return LinearOptions(w.dim(1), w.dim(0)).bias(dict.contains(detail::key_prefix(prefix) + "bias"));
}

Linear::Linear(const LinearOptions& options) : options_(options) {
  CVATTN_CHECK(options_.in_features() >= 0 && options_.out_features() >= 0, ValueError,
               "LinearOptions: in_features (", options_.in_features(), ") and out_features (",
               options_.out_features(), ") must be non-negative");
  weight_ = register_parameter("weight", {options_.out_features(), options_.in_features()});
  if (options_.bias()) bias_ = register_parameter("bias", {options_.out_features()});
}

Tensor Linear::forward(const Tensor& x) const {
  check_defined(x, "x", "Linear::forward");
  CVATTN_CHECK(x.rank() >= 1 && x.dim(-1) == options_.in_features(), ShapeError,
               "Linear::forward: tensor 'x' expected [..., ", options_.in_features(), "], got ",
               to_string(x.shape()));
  return functional::linear(x, weight_, bias_);
}

std::string Linear::describe() const {
  return "Linear(in_features=" + std::to_string(options_.in_features()) +
         ", out_features=" + std::to_string(options_.out_features()) +
         ", bias=" + detail::bool_repr(options_.bias()) + ")";
}

}  // namespace cvattn

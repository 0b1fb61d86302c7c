#include "cvattn/modules/normalization.hpp"

#include <cmath>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/normalization.hpp"
#include "modules/repr.hpp"

namespace cvattn {
namespace {

void check_eps(double eps, const char* where) {
  CVATTN_CHECK(eps >= 0 && std::isfinite(eps), ValueError, where,
               ": eps must be finite and non-negative, got ", eps);
}

// "(384,)" or "(4, 5)", as Python prints a tuple.
std::string shape_repr(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(s[i]);
  }
  return out + (s.size() == 1 ? ",)" : ")");
}

const Tensor& weight_of(const StateDict& dict, const std::string& p, const char* where) {
  CVATTN_CHECK(dict.contains(p + "weight"), ValueError, where, ": no '", p,
               "weight' to infer the normalised shape from (a module without affine "
               "parameters needs its options given)");
  return dict.at(p + "weight");
}

}  // namespace

LayerNormOptions LayerNormOptions::from_state_dict(const StateDict& dict,
                                                   const std::string& prefix) {
  const std::string p = detail::key_prefix(prefix);
  return LayerNormOptions(weight_of(dict, p, "LayerNormOptions::from_state_dict").shape());
}

LayerNorm::LayerNorm(const LayerNormOptions& options) : options_(options) {
  const Shape& s = options_.normalized_shape();
  CVATTN_CHECK(!s.empty() && s.size() < static_cast<std::size_t>(Tensor::kMaxRank), ValueError,
               "LayerNormOptions: normalized_shape must have 1 to ", Tensor::kMaxRank - 1,
               " dims, got ", to_string(s));
  for (const auto d : s) {
    CVATTN_CHECK(d > 0, ValueError, "LayerNormOptions: normalized_shape ", to_string(s),
                 " must be positive");
  }
  check_eps(options_.eps(), "LayerNormOptions");
  if (options_.elementwise_affine()) {
    weight_ = register_parameter("weight", s);
    bias_ = register_parameter("bias", s);
    weight_.fill(1.0f);
  }
}

Tensor LayerNorm::forward(const Tensor& x) const {
  return functional::layer_norm(x, options_.normalized_shape(), weight_, bias_, options_.eps());
}

std::string LayerNorm::describe() const {
  return "LayerNorm(" + shape_repr(options_.normalized_shape()) +
         ", eps=" + detail::float_repr(options_.eps()) +
         ", elementwise_affine=" + detail::bool_repr(options_.elementwise_affine()) + ")";
}

LayerNorm2dOptions LayerNorm2dOptions::from_state_dict(const StateDict& dict,
                                                       const std::string& prefix) {
  const std::string p = detail::key_prefix(prefix);
  const Tensor& w = weight_of(dict, p, "LayerNorm2dOptions::from_state_dict");
  CVATTN_CHECK(w.rank() == 1, ShapeError, "LayerNorm2dOptions::from_state_dict: '", p,
               "weight' expected [C], got ", to_string(w.shape()));
  return LayerNorm2dOptions(w.dim(0));
}

LayerNorm2d::LayerNorm2d(const LayerNorm2dOptions& options) : options_(options) {
  const std::int64_t c = options_.num_channels();
  CVATTN_CHECK(c > 0, ValueError, "LayerNorm2dOptions: num_channels must be positive, got ", c);
  check_eps(options_.eps(), "LayerNorm2dOptions");
  if (options_.affine()) {
    weight_ = register_parameter("weight", {c});
    bias_ = register_parameter("bias", {c});
    weight_.fill(1.0f);
  }
}

Tensor LayerNorm2d::forward(const Tensor& x) const {
  check_shape(x, {kAny, options_.num_channels(), kAny, kAny}, "x", "LayerNorm2d::forward");
  return functional::layer_norm2d(x, weight_, bias_, options_.eps());
}

std::string LayerNorm2d::describe() const {
  return "LayerNorm2d((" + std::to_string(options_.num_channels()) +
         ",), eps=" + detail::float_repr(options_.eps()) +
         ", elementwise_affine=" + detail::bool_repr(options_.affine()) + ")";
}

GroupNormOptions GroupNormOptions::from_state_dict(const StateDict& dict, std::int64_t num_groups,
                                                   const std::string& prefix) {
  const std::string p = detail::key_prefix(prefix);
  const Tensor& w = weight_of(dict, p, "GroupNormOptions::from_state_dict");
  CVATTN_CHECK(w.rank() == 1, ShapeError, "GroupNormOptions::from_state_dict: '", p,
               "weight' expected [C], got ", to_string(w.shape()));
  return GroupNormOptions(num_groups, w.dim(0));
}

GroupNorm::GroupNorm(const GroupNormOptions& options) : options_(options) {
  const std::int64_t g = options_.num_groups(), c = options_.num_channels();
  CVATTN_CHECK(g > 0 && c > 0 && c % g == 0, ValueError, "GroupNormOptions: num_groups (", g,
               ") must be positive and divide num_channels (", c, ")");
  check_eps(options_.eps(), "GroupNormOptions");
  if (options_.affine()) {
    weight_ = register_parameter("weight", {c});
    bias_ = register_parameter("bias", {c});
    weight_.fill(1.0f);
  }
}

Tensor GroupNorm::forward(const Tensor& x) const {
  check_defined(x, "x", "GroupNorm::forward");
  CVATTN_CHECK(x.rank() >= 2 && x.dim(1) == options_.num_channels(), ShapeError,
               "GroupNorm::forward: tensor 'x' expected shape [*, ", options_.num_channels(),
               ", ...], got ", to_string(x.shape()));
  return functional::group_norm(x, options_.num_groups(), weight_, bias_, options_.eps());
}

std::string GroupNorm::describe() const {
  return "GroupNorm(" + std::to_string(options_.num_groups()) + ", " +
         std::to_string(options_.num_channels()) + ", eps=" + detail::float_repr(options_.eps()) +
         ", affine=" + detail::bool_repr(options_.affine()) + ")";
}

}  // namespace cvattn

#include "cvattn/modules/conv2d.hpp"

#include "cvattn/core/error.hpp"
#include "cvattn/functional/conv.hpp"
#include "modules/repr.hpp"

namespace cvattn {

namespace F = functional;

namespace {

F::Conv2dOptions functional_options(const Conv2dOptions& o) {
  return F::Conv2dOptions()
      .stride(o.stride())
      .padding(o.padding())
      .dilation(o.dilation())
      .groups(o.groups());
}

}  // namespace

Conv2dOptions Conv2dOptions::from_state_dict(const StateDict& dict, const std::string& prefix,
                                             std::int64_t groups) {
  const std::string key = detail::key_prefix(prefix) + "weight";
  const Tensor& w = dict.at(key);
  CVATTN_CHECK(w.rank() == 4, ShapeError, "Conv2dOptions::from_state_dict: '", key,
               "' expected [out, in/groups, kh, kw], got ", to_string(w.shape()));
  CVATTN_CHECK(groups >= 1, ValueError,
               "Conv2dOptions::from_state_dict: groups must be positive, got ", groups);
  return Conv2dOptions(w.dim(1) * groups, w.dim(0), {w.dim(2), w.dim(3)})
      .groups(groups)
      .bias(dict.contains(detail::key_prefix(prefix) + "bias"));
}

Conv2d::Conv2d(const Conv2dOptions& options) : options_(options) {
  const auto& o = options_;
  CVATTN_CHECK(o.in_channels() > 0 && o.out_channels() > 0, ValueError,
               "Conv2dOptions: in_channels (", o.in_channels(), ") and out_channels (",
               o.out_channels(), ") must be positive");
  CVATTN_CHECK(o.kernel_size().h > 0 && o.kernel_size().w > 0, ValueError,
               "Conv2dOptions: kernel_size must be positive, got ",
               detail::tuple_repr(o.kernel_size()));
  CVATTN_CHECK(o.stride().h > 0 && o.stride().w > 0, ValueError,
               "Conv2dOptions: stride must be positive, got ", detail::tuple_repr(o.stride()));
  CVATTN_CHECK(o.padding().h >= 0 && o.padding().w >= 0, ValueError,
               "Conv2dOptions: padding must be non-negative, got ",
               detail::tuple_repr(o.padding()));
  CVATTN_CHECK(o.dilation().h > 0 && o.dilation().w > 0, ValueError,
               "Conv2dOptions: dilation must be positive, got ", detail::tuple_repr(o.dilation()));
  CVATTN_CHECK(
      o.groups() > 0 && o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
      ValueError, "Conv2dOptions: groups (", o.groups(), ") must divide in_channels (",
      o.in_channels(), ") and out_channels (", o.out_channels(), ")");
  weight_ = register_parameter("weight", {o.out_channels(), o.in_channels() / o.groups(),
                                          o.kernel_size().h, o.kernel_size().w});
  if (o.bias()) bias_ = register_parameter("bias", {o.out_channels()});
}

Tensor Conv2d::forward(const Tensor& x) const {
  const std::int64_t in = options_.in_channels();
  if (x.rank() == 3) {
    check_shape(x, {in, kAny, kAny}, "x", "Conv2d::forward");
  } else {
    check_shape(x, {kAny, in, kAny, kAny}, "x", "Conv2d::forward");
  }
  if (prepared_.weight().defined()) return F::conv2d(x, prepared_, bias_);
  return F::conv2d(x, weight_, bias_, functional_options(options_));
}

void Conv2d::on_weights_loaded() {
  prepared_ = F::Conv2dWeight(weight_, functional_options(options_));
}

std::string Conv2d::describe() const {
  const auto& o = options_;
  std::string s = "Conv2d(" + std::to_string(o.in_channels()) + ", " +
                  std::to_string(o.out_channels()) +
                  ", kernel_size=" + detail::tuple_repr(o.kernel_size()) +
                  ", stride=" + detail::tuple_repr(o.stride());
  if (o.padding() != Pair2(0)) s += ", padding=" + detail::tuple_repr(o.padding());
  if (o.dilation() != Pair2(1)) s += ", dilation=" + detail::tuple_repr(o.dilation());
  if (o.groups() != 1) s += ", groups=" + std::to_string(o.groups());
  if (!o.bias()) s += ", bias=False";
  return s + ")";
}

}  // namespace cvattn

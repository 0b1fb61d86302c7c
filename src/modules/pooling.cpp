#include "cvattn/modules/pooling.hpp"

#include "cvattn/core/error.hpp"
#include "modules/repr.hpp"

namespace cvattn {

namespace F = functional;

namespace {

void check_options(Pair2 kernel, Pair2 stride, Pair2 padding, Pair2 dilation, const char* where) {
  CVATTN_CHECK(kernel.h > 0 && kernel.w > 0, ValueError, where,
               ": kernel_size must be positive, got ", detail::tuple_repr(kernel));
  CVATTN_CHECK(stride.h > 0 && stride.w > 0, ValueError, where, ": stride must be positive, got ",
               detail::tuple_repr(stride));
  CVATTN_CHECK(dilation.h > 0 && dilation.w > 0, ValueError, where,
               ": dilation must be positive, got ", detail::tuple_repr(dilation));
  CVATTN_CHECK(
      padding.h >= 0 && padding.w >= 0 && padding.h <= kernel.h / 2 && padding.w <= kernel.w / 2,
      ValueError, where, ": padding ", detail::tuple_repr(padding),
      " must be non-negative and at most half of kernel_size ", detail::tuple_repr(kernel));
}

void check_output_size(Pair2 size, const char* where) {
  CVATTN_CHECK(size.h > 0 && size.w > 0, ValueError, where, ": output_size must be positive, got ",
               detail::tuple_repr(size));
}

}  // namespace

MaxPool2d::MaxPool2d(const F::MaxPool2dOptions& options) : options_(options) {
  check_options(options.kernel_size(), options.stride(), options.padding(), options.dilation(),
                "MaxPool2d");
}

Tensor MaxPool2d::forward(const Tensor& x) const { return F::max_pool2d(x, options_); }

std::string MaxPool2d::describe() const {
  return "MaxPool2d(kernel_size=" + detail::int_or_tuple_repr(options_.kernel_size()) +
         ", stride=" + detail::int_or_tuple_repr(options_.stride()) +
         ", padding=" + detail::int_or_tuple_repr(options_.padding()) +
         ", dilation=" + detail::int_or_tuple_repr(options_.dilation()) +
         ", ceil_mode=" + detail::bool_repr(options_.ceil_mode()) + ")";
}

AvgPool2d::AvgPool2d(const F::AvgPool2dOptions& options) : options_(options) {
  check_options(options.kernel_size(), options.stride(), options.padding(), Pair2(1), "AvgPool2d");
  CVATTN_CHECK(!options.divisor_override() || *options.divisor_override() != 0, ValueError,
               "AvgPool2d: divisor_override must be non-zero");
}

Tensor AvgPool2d::forward(const Tensor& x) const { return F::avg_pool2d(x, options_); }

std::string AvgPool2d::describe() const {
  return "AvgPool2d(kernel_size=" + detail::int_or_tuple_repr(options_.kernel_size()) +
         ", stride=" + detail::int_or_tuple_repr(options_.stride()) +
         ", padding=" + detail::int_or_tuple_repr(options_.padding()) + ")";
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Pair2 output_size) : output_size_(output_size) {
  check_output_size(output_size, "AdaptiveAvgPool2d");
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) const {
  return F::adaptive_avg_pool2d(x, output_size_);
}

std::string AdaptiveAvgPool2d::describe() const {
  return "AdaptiveAvgPool2d(output_size=" + detail::int_or_tuple_repr(output_size_) + ")";
}

AdaptiveMaxPool2d::AdaptiveMaxPool2d(Pair2 output_size) : output_size_(output_size) {
  check_output_size(output_size, "AdaptiveMaxPool2d");
}

Tensor AdaptiveMaxPool2d::forward(const Tensor& x) const {
  return F::adaptive_max_pool2d(x, output_size_);
}

std::string AdaptiveMaxPool2d::describe() const {
  return "AdaptiveMaxPool2d(output_size=" + detail::int_or_tuple_repr(output_size_) + ")";
}

}  // namespace cvattn

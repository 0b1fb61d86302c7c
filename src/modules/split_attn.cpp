#include "cvattn/modules/split_attn.hpp"

#include <sstream>
#include <tuple>

#include "cvattn/core/error.hpp"
#include "cvattn/core/make_divisible.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/gates.hpp"
#include "modules/detail/gate_modules.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace F = cvattn::functional;

namespace cvattn {

SplitAttnOptions SplitAttnOptions::from_state_dict(const StateDict& dict, const std::string& prefix,
                                                   std::int64_t radix, std::int64_t groups) {
  const char* where = "SplitAttnOptions::from_state_dict";
  CVATTN_CHECK(radix >= 1 && groups >= 1, ValueError, where,
               ": radix and groups must be >= 1, got radix=", radix, ", groups=", groups);
  const StateDict d = detail::scoped(dict, prefix);
  const Shape& wc = detail::require_shape(d, "conv.weight", {kAny, kAny, kAny, kAny}, where);
  const Shape& w1 = detail::require_conv1x1(d, "fc1.weight", where);
  const Shape& w2 = detail::require_conv1x1(d, "fc2.weight", where);
  CVATTN_CHECK(wc[2] == wc[3], ValueError, where, ": 'conv.weight' expected a square kernel, got ",
               to_string(wc));
  const std::int64_t mid = wc[0];
  CVATTN_CHECK(mid % radix == 0 && w1[1] * groups * radix == mid, ValueError, where, ": radix ",
               radix, " and groups ", groups, " contradict the weights: 'conv.weight' ",
               to_string(wc), " has radix * C_out = ", mid, " rows and 'fc1.weight' ",
               to_string(w1), " C_out / groups = ", w1[1], " inputs (radix * groups must be ",
               mid / w1[1], ")");
  CVATTN_CHECK(w2[0] == mid && w2[1] * groups == w1[0], ValueError, where, ": 'fc2.weight' ",
               to_string(w2), " expected [", mid, ", ", w1[0] / groups,
               ", 1, 1] (from 'fc1.weight' ", to_string(w1), " and groups ", groups, ")");
  return SplitAttnOptions(wc[1] * groups * radix, mid / radix)
      .kernel_size(wc[2])
      .radix(radix)
      .groups(groups)
      .bias(d.contains("conv.bias"))
      .norm(d.has_prefix("bn0"))
      .attn_channels(w1[0]);
}

SplitAttn::SplitAttn(const SplitAttnOptions& options) : options_(options) {
  const char* who = "SplitAttnOptions";
  const std::int64_t in = options_.in_channels(), out = options_.out_channels();
  const std::int64_t r = options_.radix(), g = options_.groups(), k = options_.kernel_size();
  CVATTN_CHECK(in >= 1 && out >= 1 && k >= 1 && r >= 1 && g >= 1, ValueError, who,
               ": in_channels, out_channels, kernel_size, radix and groups must be >= 1");
  CVATTN_CHECK(in % (g * r) == 0 && out % g == 0, ValueError, who, ": groups * radix (", g * r,
               ") must divide in_channels (", in, ") and groups (", g, ") out_channels (", out,
               ")");
  CVATTN_CHECK(
      options_.effective_padding() >= 0 && options_.stride() >= 1 && options_.dilation() >= 1,
      ValueError, who, ": padding must be >= 0 and stride, dilation >= 1");
  attn_ = options_.attn_channels() > 0
              ? options_.attn_channels()
              : make_divisible(static_cast<double>(in * r) * options_.rd_ratio(),
                               options_.rd_divisor(), 32, 0.9);
  CVATTN_CHECK(attn_ % g == 0, ValueError, who, ": groups (", g, ") must divide attn_channels (",
               attn_, ")");
  const std::int64_t mid = out * r;
  conv_ =
      register_module("conv", std::make_shared<Conv2d>(Conv2dOptions(in, mid, k)
                                                           .stride(options_.stride())
                                                           .padding(options_.effective_padding())
                                                           .dilation(options_.dilation())
                                                           .groups(g * r)
                                                           .bias(options_.bias())));
  if (options_.norm()) {
    bn0_ = register_module("bn0", std::make_shared<BatchNorm2d>(BatchNorm2dOptions(mid)));
  }
  fc1_ = register_module("fc1", std::make_shared<Conv2d>(Conv2dOptions(out, attn_, 1).groups(g)));
  if (options_.norm()) {
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(BatchNorm2dOptions(attn_)));
  }
  fc2_ = register_module("fc2", std::make_shared<Conv2d>(Conv2dOptions(attn_, mid, 1).groups(g)));
  fold();
}

void SplitAttn::on_weights_loaded() { fold(); }

void SplitAttn::fold() {
  if (!bn0_) return;
  std::tie(folded_weight_, folded_bias_) =
      F::fold_batch_norm(conv_->weight(), conv_->bias(), bn0_->running_mean(), bn0_->running_var(),
                         bn0_->weight(), bn0_->bias(), bn0_->options().eps());
  prepared_ = F::Conv2dWeight(folded_weight_, F::Conv2dOptions()
                                                  .stride(Pair2(options_.stride()))
                                                  .padding(Pair2(options_.effective_padding()))
                                                  .dilation(Pair2(options_.dilation()))
                                                  .groups(options_.groups() * options_.radix()));
}

std::string SplitAttn::describe() const {
  std::ostringstream out;
  out << "SplitAttn(in_channels=" << options_.in_channels()
      << ", out_channels=" << options_.out_channels() << ", kernel_size=" << options_.kernel_size()
      << ", stride=" << options_.stride() << ", padding=" << options_.effective_padding()
      << ", dilation=" << options_.dilation() << ", groups=" << options_.groups()
      << ", radix=" << options_.radix() << ", attn_channels=" << attn_
      << ", bias=" << (options_.bias() ? "true" : "false")
      << ", norm=" << (options_.norm() ? "batch_norm" : "none") << ")";
  return out.str();
}

Tensor SplitAttn::forward(const Tensor& x) const { return run(x, false).output; }

Attended SplitAttn::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended SplitAttn::run(const Tensor& x, bool keep_maps) const {
  check_shape(x, {kAny, options_.in_channels(), kAny, kAny}, "x", "SplitAttn::forward");
  const std::int64_t r = options_.radix(), out = options_.out_channels();
  // conv then bn0 as one conv with the folded weights (one pass over [N, r*C, ..] fewer), the
  // ReLU fused into it.
  const Tensor u = bn0_ ? F::conv2d(x, prepared_, folded_bias_, ActLayer::relu)
                        : F::relu(conv_->forward(x));  // [N, r*C, ..]
  const std::int64_t n = u.dim(0);
  const Tensor s = F::radix_pool(u, r).reshape({n, out, 1, 1});
  const Tensor z = fc2_->forward(F::relu(detail::maybe_batch_norm(bn1_, fc1_->forward(s))));
  const Tensor a = F::radix_softmax(z, r, options_.groups());  // [N, r, C]
  Attended result{F::radix_combine(u, a), {}};
  if (keep_maps) result.maps.add(maps::kAttention, a);
  return result;
}

}  // namespace cvattn

#include "cvattn/modules/deform_conv.hpp"

#include <algorithm>
#include <cstring>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "cvattn/functional/deform_conv.hpp"
#include "modules/repr.hpp"

namespace cvattn {

namespace F = functional;

namespace {

// Channels [begin, end) of a [N, C, H, W] tensor, copied.
Tensor channel_slice(const Tensor& t, std::int64_t begin, std::int64_t end) {
  const std::int64_t n = t.dim(0), c = t.dim(1), plane = t.dim(2) * t.dim(3);
  Tensor out = Tensor::empty({n, end - begin, t.dim(2), t.dim(3)});
  const auto bytes = static_cast<std::size_t>((end - begin) * plane) * sizeof(float);
  for (std::int64_t i = 0; i < n; ++i) {
    if (bytes > 0) {
      std::memcpy(out.data() + i * (end - begin) * plane, t.data() + (i * c + begin) * plane,
                  bytes);
    }
  }
  return out;
}

}  // namespace

DeformConv2dOptions DeformConv2dOptions::from_state_dict(const StateDict& dict,
                                                         std::int64_t deform_groups,
                                                         const std::string& prefix) {
  constexpr const char* kWhere = "DeformConv2dOptions::from_state_dict";
  const std::string p = detail::key_prefix(prefix);
  const std::string w_key = p + "weight";
  const std::string o_key = p + "conv_offset.weight";
  const Tensor& w = dict.at(w_key);
  const Tensor& o = dict.at(o_key);
  CVATTN_CHECK(w.rank() == 4, ShapeError, kWhere, ": '", w_key,
               "' expected [out, in/groups, kh, kw], got ", to_string(w.shape()));
  CVATTN_CHECK(o.rank() == 4, ShapeError, kWhere, ": '", o_key,
               "' expected [channels, in, kh, kw], got ", to_string(o.shape()));
  CVATTN_CHECK(deform_groups >= 1, ValueError, kWhere, ": deform_groups must be positive, got ",
               deform_groups);
  const std::int64_t kh = w.dim(2), kw = w.dim(3);
  CVATTN_CHECK(o.dim(2) == kh && o.dim(3) == kw, ShapeError, kWhere, ": '", o_key,
               "' expected the kernel (", kh, ", ", kw, ") of '", w_key, "' ", to_string(w.shape()),
               ", got ", to_string(o.shape()));
  const std::int64_t in = o.dim(1);
  CVATTN_CHECK(w.dim(1) > 0 && in % w.dim(1) == 0, ShapeError, kWhere, ": '", w_key, "' ",
               to_string(w.shape()), " expects a multiple of ", w.dim(1), " input channels, but '",
               o_key, "' ", to_string(o.shape()), " has ", in);
  const std::int64_t taps = kh * kw;
  const std::int64_t channels = o.dim(0);
  const bool v1 = channels == 2 * deform_groups * taps;
  const bool v2 = channels == 3 * deform_groups * taps;
  CVATTN_CHECK(
      v1 || v2, ValueError, kWhere, ": '", o_key, "' ", to_string(o.shape()), " has ", channels,
      " output channels; expected 2*deform_groups*kh*kw = ", 2 * deform_groups * taps,
      " (DCNv1) or 3*deform_groups*kh*kw = ", 3 * deform_groups * taps,
      " (DCNv2, modulated) for deform_groups=", deform_groups, " and kernel (", kh, ", ", kw, ")");
  return DeformConv2dOptions(in, w.dim(0), {kh, kw})
      .groups(in / w.dim(1))
      .deform_groups(deform_groups)
      .modulated(v2)
      .bias(dict.contains(p + "bias"));
}

DeformConv2d::DeformConv2d(const DeformConv2dOptions& options) : options_(options) {
  const auto& o = options_;
  constexpr const char* kWhere = "DeformConv2dOptions";
  CVATTN_CHECK(o.in_channels() > 0 && o.out_channels() > 0, ValueError, kWhere, ": in_channels (",
               o.in_channels(), ") and out_channels (", o.out_channels(), ") must be positive");
  CVATTN_CHECK(o.kernel_size().h > 0 && o.kernel_size().w > 0, ValueError, kWhere,
               ": kernel_size must be positive, got ", detail::tuple_repr(o.kernel_size()));
  CVATTN_CHECK(o.stride().h > 0 && o.stride().w > 0, ValueError, kWhere,
               ": stride must be positive, got ", detail::tuple_repr(o.stride()));
  CVATTN_CHECK(o.padding().h >= 0 && o.padding().w >= 0, ValueError, kWhere,
               ": padding must be non-negative, got ", detail::tuple_repr(o.padding()));
  CVATTN_CHECK(o.dilation().h > 0 && o.dilation().w > 0, ValueError, kWhere,
               ": dilation must be positive, got ", detail::tuple_repr(o.dilation()));
  CVATTN_CHECK(
      o.groups() > 0 && o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
      ValueError, kWhere, ": groups (", o.groups(), ") must divide in_channels (", o.in_channels(),
      ") and out_channels (", o.out_channels(), ")");
  CVATTN_CHECK(o.deform_groups() > 0 && o.in_channels() % o.deform_groups() == 0, ValueError,
               kWhere, ": deform_groups (", o.deform_groups(), ") must divide in_channels (",
               o.in_channels(), ")");
  CVATTN_CHECK(!o.bias() || o.modulated(), ValueError, kWhere,
               ": mmcv's DeformConv2dPack (DCNv1) has no bias; only the modulated (DCNv2) "
               "variant takes one");
  const std::int64_t taps = o.kernel_size().h * o.kernel_size().w;
  CVATTN_CHECK(taps <= (std::int64_t{1} << 20) && o.deform_groups() <= (std::int64_t{1} << 20),
               ValueError, kWhere, ": kernel_size ", detail::tuple_repr(o.kernel_size()),
               " with deform_groups ", o.deform_groups(), " is too large");
  weight_ = register_parameter("weight", {o.out_channels(), o.in_channels() / o.groups(),
                                          o.kernel_size().h, o.kernel_size().w});
  if (o.bias()) bias_ = register_parameter("bias", {o.out_channels()});
  const std::int64_t offset_channels = (o.modulated() ? 3 : 2) * o.deform_groups() * taps;
  conv_offset_ = register_module(
      "conv_offset",
      std::make_shared<Conv2d>(Conv2dOptions(o.in_channels(), offset_channels, o.kernel_size())
                                   .stride(o.stride())
                                   .padding(o.padding())
                                   .dilation(o.dilation())
                                   .bias(true)));
}

Attended DeformConv2d::run(const Tensor& x, bool keep_maps) const {
  check_shape(x, {kAny, options_.in_channels(), kAny, kAny}, "x", "DeformConv2d::forward");
  const Tensor predicted = conv_offset_->forward(x);  // [N, (2|3)*dg*K, Ho, Wo]
  const auto fo = F::DeformConv2dOptions()
                      .stride(options_.stride())
                      .padding(options_.padding())
                      .dilation(options_.dilation());
  Attended result;
  if (!options_.modulated()) {
    result.output = F::deform_conv2d(x, predicted, weight_, {}, {}, fo);
    if (keep_maps) result.maps.add(maps::kOffset, predicted);
    return result;
  }
  // mmcv: o1, o2, m = chunk(out, 3, dim=1); offset = cat(o1, o2); mask = sigmoid(m). The chunk
  // boundaries do not align with (dy, dx) pairs; only the concatenation matters.
  const std::int64_t split =
      2 * options_.deform_groups() * options_.kernel_size().h * options_.kernel_size().w;
  const Tensor offset = channel_slice(predicted, 0, split);
  const Tensor mask = F::sigmoid(channel_slice(predicted, split, predicted.dim(1)));
  result.output = F::deform_conv2d(x, offset, weight_, bias_, mask, fo);
  if (keep_maps) {
    result.maps.add(maps::kOffset, offset);
    result.maps.add(maps::kMask, mask);
  }
  return result;
}

Tensor DeformConv2d::forward(const Tensor& x) const { return run(x, false).output; }

Attended DeformConv2d::forward_with_maps(const Tensor& x) const { return run(x, true); }

std::string DeformConv2d::describe() const {
  const auto& o = options_;
  return std::string(o.modulated() ? "ModulatedDeformConv2dPack" : "DeformConv2dPack") +
         "(in_channels=" + std::to_string(o.in_channels()) +
         ", out_channels=" + std::to_string(o.out_channels()) +
         ", kernel_size=" + detail::tuple_repr(o.kernel_size()) +
         ", stride=" + detail::tuple_repr(o.stride()) +
         ", padding=" + detail::tuple_repr(o.padding()) +
         ", dilation=" + detail::tuple_repr(o.dilation()) +
         ", groups=" + std::to_string(o.groups()) +
         ", deform_groups=" + std::to_string(o.deform_groups()) +
         ", bias=" + detail::bool_repr(o.bias()) + ")";
}

}  // namespace cvattn

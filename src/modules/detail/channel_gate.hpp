#pragma once
// The input check of the channel-gate modules (SqueezeExcitation, Eca, Cbam), whose forward is
// functional/channel_attention.hpp.
#include <cstdint>

#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"

namespace cvattn::detail {

// x must be [N, channels, H, W] (channels kAny: any) with H, W >= 1, since the gate pools over
// them; ShapeError "<where>: tensor 'x' expected H, W >= 1 (<why>), got [..]" otherwise.
inline Tensor::Nchw gate_input(const Tensor& x, std::int64_t channels, const char* where,
                               const char* why) {
  check_shape(x, {kAny, channels, kAny, kAny}, "x", where);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, where, ": tensor 'x' expected H, W >= 1 (", why,
               "), got ", to_string(x.shape()));
  return s;
}

}  // namespace cvattn::detail

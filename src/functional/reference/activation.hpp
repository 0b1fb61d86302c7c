#pragma once
// Reference twin of functional/detail/activation_kernels.hpp: each activation by its definition
// in scalar float code (std::exp, std::erf, std::tanh), the oracle of the parity test run on
// every SIMD target. Non-finite inputs give PyTorch's results.
#include <cmath>
#include <cstdint>
#include <limits>

#include "cvattn/functional/activation.hpp"

namespace cvattn::reference {

inline float activation(ActLayer act, float x) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  switch (act) {
    case ActLayer::identity:
      return x;
    case ActLayer::relu:
      return x < 0.0f ? 0.0f : x;
    case ActLayer::relu6: {
      const float v = x < 0.0f ? 0.0f : x;
      return v > 6.0f ? 6.0f : v;
    }
    case ActLayer::hard_swish: {
      float t = x + 3.0f;
      t = t < 0.0f ? 0.0f : t;
      t = t > 6.0f ? 6.0f : t;
      return x * t / 6.0f;
    }
    case ActLayer::hard_sigmoid: {
      float t = (x + 3.0f) / 6.0f;
      t = t < 0.0f ? 0.0f : t;
      return t > 1.0f ? 1.0f : t;
    }
    case ActLayer::sigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case ActLayer::silu:
      return x < -88.0f ? x * 0.0f : x / (1.0f + std::exp(-x));
    case ActLayer::tanh:
      return std::tanh(x);
    case ActLayer::gelu:
      return std::isinf(x) && x < 0 ? kNaN : 0.5f * x * (1.0f + std::erf(x * 0.7071067811865476f));
    case ActLayer::gelu_tanh: {
      if (std::isinf(x) && x < 0) return kNaN;
      const float inner = 0.7978845608028654f * x * (1.0f + 0.044715f * x * x);
      return 0.5f * x * (1.0f + std::tanh(inner));
    }
    case ActLayer::mish:
      return x < -88.0f ? x * 0.0f : x * std::tanh(std::log1p(std::exp(std::min(x, 20.0f))));
  }
  return x;
}

inline void activation_kernel(ActLayer act, const float* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = activation(act, x[i]);
}

}  // namespace cvattn::reference

#pragma once
// Weights of whole networks generated from a seed, identically to tests/fixtures/models.py
// (see its docstring for the recipe), so the fixtures need not hold 100 MB of weights.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "cvattn/core/module.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "support/tensor_near.hpp"

namespace cvattn::test {

inline constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;

inline std::uint64_t fnv1a64(const std::string& text) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (const unsigned char b : text) {
    h ^= b;
    h *= 0x100000001B3ull;
  }
  return h;
}

// Values for state_dict key `key` (or "input") of the given shape.
inline Tensor generated(const std::string& key, const Shape& shape, std::uint64_t seed) {
  Tensor t = Tensor::empty(shape);
  const std::uint64_t state = fnv1a64(key) ^ (seed * kGolden);
  const std::size_t dot = key.rfind('.');
  const std::string last = dot == std::string::npos ? key : key.substr(dot + 1);
  const bool rank1 = shape.size() == 1;
  enum { kScale, kUnitCentred, kSmall, kHalf, kRaw } kind = kScale;
  if (last == "running_var" || (rank1 && last == "weight")) {
    kind = kUnitCentred;
  } else if (last == "running_mean" || (rank1 && last == "bias")) {
    kind = kSmall;
  } else if (last == "pos_embed" || last == "cls_token" || last == "dist_token") {
    kind = kHalf;
  } else if (key == "input") {
    kind = kRaw;
  }
  float scale = 1.0f;
  if (kind == kScale) {
    std::int64_t fan_in = 1;
    for (std::size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
    scale = static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in)));
  }
  float* p = t.data();
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    std::uint64_t z = state + static_cast<std::uint64_t>(i + 1) * kGolden;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const auto k = static_cast<std::int64_t>(z >> 40) - (std::int64_t{1} << 23);
    const float v = static_cast<float>(k) * (1.0f / 8388608.0f);  // exact
    switch (kind) {
      case kUnitCentred:
        p[i] = 1.0f + v * 0.5f;  // the product is exact, so contraction cannot change it
        break;
      case kSmall:
        p[i] = v * 0.1f;
        break;
      case kHalf:
        p[i] = v * 0.5f;
        break;
      case kRaw:
        p[i] = v;
        break;
      case kScale:
        p[i] = v * scale;
        break;
    }
  }
  return t;
}

// sum_i bits_i * (2i + 1) mod 2^64, xor FNV(key), as models.py's checksum().
inline std::uint64_t checksum(const std::string& key, const Tensor& t) {
  std::uint64_t s = 0;
  const float* p = t.data();
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, p + i, 4);
    s += static_cast<std::uint64_t>(bits) * (2 * static_cast<std::uint64_t>(i) + 1);
  }
  return s ^ fnv1a64(key);
}

struct GeneratedWeights {
  StateDict dict;
  std::uint64_t checksum = 0;  // sum over the float tensors, mod 2^64
};

// Every float parameter and buffer of `model` generated under its key; integer buffers
// (num_batches_tracked) are left out, as a state_dict may omit them.
inline GeneratedWeights generated_state_dict(const Module& model, std::uint64_t seed) {
  GeneratedWeights out;
  const StateDict skeleton = model.state_dict();
  for (const auto& e : skeleton.entries()) {
    if (e.integer) continue;
    Tensor t = generated(e.key, e.value.shape(), seed);
    out.checksum += checksum(e.key, t);
    out.dict.set(e.key, t);
  }
  return out;
}

// docs/cli.md's bar for whole networks: |y - ref| <= 1e-4 * (1 + max|ref|).
inline Tolerance network_tolerance(const Tensor& ref) {
  float peak = 0.0f;
  for (std::int64_t i = 0; i < ref.numel(); ++i) peak = std::max(peak, std::abs(ref[i]));
  return Tolerance{1e-4 * (1.0 + peak), 0.0};
}

}  // namespace cvattn::test

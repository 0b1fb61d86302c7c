#include "cvattn/functional/channel_attention.hpp"

#include <cstdint>
#include <vector>

#include "cvattn/core/error.hpp"
#include "functional/detail/bn_affine.hpp"
#include "functional/detail/channel_kernels.hpp"
#include "functional/detail/reduce.hpp"

namespace cvattn::functional {
namespace {

namespace cd = cvattn::detail;

// Pixels per block of CBAM's channel-reduce pass: the running sum and max of a block
// (2 x 4 KiB) stay in L1 while all C planes stream through.
constexpr std::int64_t kPixelBlock = 1024;

// x [N, C, H, W] with H, W >= 1, since the gates pool over them.
Tensor::Nchw gate_input(const Tensor& x, const char* where) {
  check_defined(x, "x", where);
  check_shape(x, {kAny, kAny, kAny, kAny}, "x", where);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, where,
               ": tensor 'x' expected H, W >= 1 (the gate pools over them), got ",
               to_string(x.shape()));
  return s;
}

// A 1x1 conv weight [rows, cols] or [rows, cols, 1, 1] (rows kAny: any >= 1); returns rows.
std::int64_t matrix(const Tensor& t, std::int64_t rows, std::int64_t cols, const char* name,
                    const char* where) {
  check_defined(t, name, where);
  if (t.rank() == 4) {
    check_shape(t, {rows, cols, 1, 1}, name, where);
  } else {
    check_shape(t, {rows, cols}, name, where);
  }
  CVATTN_CHECK(t.dim(0) >= 1, ShapeError, where, ": tensor '", name,
               "' expected at least one output row, got ", to_string(t.shape()));
  return t.dim(0);
}

// An optional [n] vector: nullptr when undefined.
const float* optional_vector(const Tensor& t, std::int64_t n, const char* name, const char* where) {
  if (!t.defined()) return nullptr;
  check_shape(t, {n}, name, where);
  return t.data();
}

// The inference BatchNorm given by four [n] tensors, folded per channel.
std::vector<cd::BnAffine> folded_norm(const Tensor& weight, const Tensor& bias, const Tensor& mean,
                                      const Tensor& var, std::int64_t n, const char* where) {
  check_shape(weight, {n}, "bn_weight", where);
  check_shape(bias, {n}, "bn_bias", where);
  check_shape(mean, {n}, "bn_mean", where);
  check_shape(var, {n}, "bn_var", where);
  std::vector<cd::BnAffine> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r) {
    out.push_back(cd::bn_affine(weight[r], bias[r], mean[r], var[r], 1e-5f));
  }
  return out;
}

// ReLU that keeps NaN, as torch does.
inline float relu(float v) { return v > 0.0f ? v : (v == v ? 0.0f : v); }

}  // namespace

ChannelGated squeeze_excitation(const Tensor& x, const SqueezeExcitationWeights& weights,
                                bool add_maxpool, GateLayer gate_layer) {
  constexpr const char* kWhere = "squeeze_excitation";
  const Tensor::Nchw s = gate_input(x, kWhere);
  const std::int64_t channels = s.c;
  const std::int64_t hw = s.h * s.w;
  const std::int64_t rd = matrix(weights.fc1_weight, kAny, channels, "fc1_weight", kWhere);
  matrix(weights.fc2_weight, channels, rd, "fc2_weight", kWhere);
  const float* b1 = optional_vector(weights.fc1_bias, rd, "fc1_bias", kWhere);
  const float* b2 = optional_vector(weights.fc2_bias, channels, "fc2_bias", kWhere);
  const bool norm = weights.bn_weight.defined() || weights.bn_bias.defined() ||
                    weights.bn_mean.defined() || weights.bn_var.defined();
  const std::vector<cd::BnAffine> bn =
      norm ? folded_norm(weights.bn_weight, weights.bn_bias, weights.bn_mean, weights.bn_var, rd,
                         kWhere)
           : std::vector<cd::BnAffine>();

  // Everything is allocated before the parallel regions, which must not throw; scratch goes
  // through Tensor so the allocation cap applies to it too.
  Tensor y = Tensor::empty(x.shape());
  Tensor gate = Tensor::empty({s.n, channels});
  Tensor pooled = Tensor::empty({s.n, channels});
  Tensor hidden = Tensor::empty({s.n, rd});
  const float* xp = x.data();
  float* yp = y.data();
  float* gp = gate.data();
  float* pp = pooled.data();
  float* hp = hidden.data();
  const float* w1 = weights.fc1_weight.data();
  const float* w2 = weights.fc2_weight.data();

  auto excite = [&](std::int64_t n) {
    float* z = hp + n * rd;
    cd::dot_rows(w1, rd, channels, pp + n * channels, b1, z);
    for (std::int64_t r = 0; r < rd; ++r) {
      float zr = z[r];
      if (!bn.empty()) {
        const cd::BnAffine& f = bn[static_cast<std::size_t>(r)];
        zr = zr * f.alpha + f.beta;
      }
      z[r] = relu(zr);
    }
    float* g = gp + n * channels;
    cd::dot_rows(w2, channels, rd, z, b2, g);
    cd::apply_gate(gate_layer, g, channels);
  };
  cd::pool_excite_scale(xp, yp, gp, pp, s.n, channels, hw, add_maxpool, excite);
  return {y, gate};
}

ChannelGated efficient_channel_attention(const Tensor& x, const EcaWeights& weights,
                                         GateLayer gate_layer) {
  constexpr const char* kWhere = "efficient_channel_attention";
  const Tensor::Nchw s = gate_input(x, kWhere);
  const std::int64_t channels = s.c;
  const std::int64_t hw = s.h * s.w;
  const bool use_mlp = weights.conv2_weight.defined();
  std::int64_t k = 0, rd = 0;
  if (use_mlp) {
    check_shape(weights.conv_weight, {kAny, 1, 1}, "conv_weight", kWhere);
    rd = weights.conv_weight.dim(0);
    check_shape(weights.conv_bias, {rd}, "conv_bias", kWhere);
    check_shape(weights.conv2_weight, {1, rd, kAny}, "conv2_weight", kWhere);
    check_shape(weights.conv2_bias, {1}, "conv2_bias", kWhere);
    k = weights.conv2_weight.dim(2);
  } else {
    check_shape(weights.conv_weight, {1, 1, kAny}, "conv_weight", kWhere);
    k = weights.conv_weight.dim(2);
  }
  CVATTN_CHECK(k >= 1 && k % 2 == 1, ShapeError, kWhere,
               ": the kernel size must be odd (padding (k-1)/2 keeps the length C), got ", k);
  const std::int64_t pad = (k - 1) / 2;

  Tensor y = Tensor::empty(x.shape());
  Tensor gate = Tensor::empty({s.n, channels});
  Tensor pooled = Tensor::empty({s.n, channels});
  const float* xp = x.data();
  float* yp = y.data();
  float* gp = gate.data();
  float* pp = pooled.data();
  const float* w = use_mlp ? weights.conv2_weight.data() : weights.conv_weight.data();  // [R|1, k]
  const float* w1 = use_mlp ? weights.conv_weight.data() : nullptr;
  const float* b1 = use_mlp ? weights.conv_bias.data() : nullptr;
  const float b2 = use_mlp ? weights.conv2_bias[0] : 0.0f;

  auto excite = [&](std::int64_t n) {
    const float* v = pp + n * channels;
    float* g = gp + n * channels;
    for (std::int64_t c = 0; c < channels; ++c) {
      // Taps t with c + t - pad inside [0, C); the rest read the zero padding.
      const std::int64_t t0 = pad - c > 0 ? pad - c : 0;
      const std::int64_t t1 = channels + pad - c < k ? channels + pad - c : k;
      double acc = b2;
      if (!use_mlp) {
        for (std::int64_t t = t0; t < t1; ++t) {
          acc += static_cast<double>(w[t]) * v[c + t - pad];
        }
      } else {
        // conv (1 -> R, k=1) and ReLU recomputed per tap: cheaper than a [R, C] scratch.
        for (std::int64_t r = 0; r < rd; ++r) {
          const float* wr = w + r * k;
          for (std::int64_t t = t0; t < t1; ++t) {
            const float h = relu(w1[r] * v[c + t - pad] + b1[r]);
            acc += static_cast<double>(wr[t]) * h;
          }
        }
      }
      g[c] = static_cast<float>(acc);
    }
    cd::apply_gate(gate_layer, g, channels);
  };
  cd::pool_excite_scale(xp, yp, gp, pp, s.n, channels, hw, false, excite);
  return {y, gate};
}

CbamGated cbam(const Tensor& x, const CbamWeights& weights, GateLayer gate_layer) {
  constexpr const char* kWhere = "cbam";
  const Tensor::Nchw s = gate_input(x, kWhere);
  const std::int64_t channels = s.c;
  const std::int64_t hw = s.h * s.w;
  const std::int64_t rd = matrix(weights.fc1_weight, kAny, channels, "fc1_weight", kWhere);
  matrix(weights.fc2_weight, channels, rd, "fc2_weight", kWhere);
  const float* b1 = optional_vector(weights.fc1_bias, rd, "fc1_bias", kWhere);
  const float* b2 = optional_vector(weights.fc2_bias, channels, "fc2_bias", kWhere);
  check_shape(weights.spatial_weight, {1, 2, kAny, kAny}, "spatial_weight", kWhere);
  const std::int64_t k = weights.spatial_weight.dim(2);
  CVATTN_CHECK(k == weights.spatial_weight.dim(3) && k % 2 == 1 && k <= 255, ShapeError, kWhere,
               ": tensor 'spatial_weight' expected [1, 2, k, k] with k odd and at most 255, got ",
               to_string(weights.spatial_weight.shape()));
  const cd::BnAffine bn = folded_norm(weights.bn_weight, weights.bn_bias, weights.bn_mean,
                                      weights.bn_var, 1, kWhere)[0];

  // Everything is allocated before the parallel regions, which must not throw.
  Tensor y = Tensor::empty(x.shape());
  Tensor channel_gate = Tensor::empty({s.n, channels});
  Tensor spatial_gate = Tensor::empty({s.n, 1, s.h, s.w});
  Tensor avg = Tensor::empty({s.n, channels});
  Tensor mx = Tensor::empty({s.n, channels});
  Tensor hidden = Tensor::empty({s.n, rd});
  Tensor branch = Tensor::empty({s.n, channels});  // fc2 of the max-pooled branch
  // Per sample: [mean_c, max_c] of the channel-refined tensor, the spatial conv's input.
  Tensor reduced = Tensor::empty({s.n, 2, hw});
  const std::int64_t padded_size = 2 * (s.h + k - 1) * (s.w + k - 1);
  Tensor padded = Tensor::empty({s.n, padded_size});

  const float* xp = x.data();
  float* yp = y.data();
  float* cg = channel_gate.data();
  float* sg = spatial_gate.data();
  float* avg_p = avg.data();
  float* max_p = mx.data();
  float* hid_p = hidden.data();
  float* branch_p = branch.data();
  float* red_p = reduced.data();
  float* pad_p = padded.data();
  const float* w1 = weights.fc1_weight.data();
  const float* w2 = weights.fc2_weight.data();
  const float* wc = weights.spatial_weight.data();
  const bool stream = static_cast<std::int64_t>(y.nbytes()) > cd::streaming_store_bytes();

  auto pool = [&](std::int64_t n, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const cd::PlaneStats st = cd::plane_mean_max(xp + (n * channels + c) * hw, hw);
      avg_p[n * channels + c] = st.mean;
      max_p[n * channels + c] = st.max;
    }
  };
  // fc2(ReLU(fc1(v))) for one pooled vector, added into g.
  auto mlp = [&](const float* v, float* h, float* g) {
    cd::dot_rows(w1, rd, channels, v, b1, h);
    for (std::int64_t r = 0; r < rd; ++r) h[r] = relu(h[r]);
    cd::dot_rows(w2, channels, rd, h, b2, g);
  };
  auto channel_excite = [&](std::int64_t n) {
    float* h = hid_p + n * rd;
    float* g = cg + n * channels;
    float* from_max = branch_p + n * channels;
    mlp(avg_p + n * channels, h, g);
    mlp(max_p + n * channels, h, from_max);
    // Each branch is rounded to float before the sum, as fc2(avg) + fc2(max) in PyTorch.
    for (std::int64_t c = 0; c < channels; ++c) g[c] += from_max[c];
    cd::apply_gate(gate_layer, g, channels);
  };
  // [mean_c, max_c] of x * g over pixels [p0, p1); x * g itself is not stored.
  auto reduce = [&](std::int64_t n, std::int64_t p0, std::int64_t p1) {
    float* mean_c = red_p + n * 2 * hw;
    float* max_c = mean_c + hw;
    for (std::int64_t b = p0; b < p1; b += kPixelBlock) {
      const std::int64_t e = b + kPixelBlock < p1 ? b + kPixelBlock : p1;
      cd::channel_mean_max_scaled(xp + n * channels * hw, cg + n * channels, channels, hw, b, e,
                                  mean_c + b, max_c + b);
    }
  };
  auto pad = [&](std::int64_t n) {
    cd::pad_planes(red_p + n * 2 * hw, k, s.h, s.w, pad_p + n * padded_size);
  };
  auto spatial_excite = [&](std::int64_t n, std::int64_t row0, std::int64_t row1) {
    float* out = sg + n * hw;
    cd::spatial_conv(pad_p + n * padded_size, wc, k, s.h, s.w, row0, row1, out);
    float* rows = out + row0 * s.w;
    const std::int64_t count = (row1 - row0) * s.w;
    for (std::int64_t i = 0; i < count; ++i) rows[i] = rows[i] * bn.alpha + bn.beta;
    cd::apply_gate(gate_layer, rows, count);
  };
  // y = (x * g) * s: the only pass that writes y.
  auto scale = [&](std::int64_t n, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int64_t off = (n * channels + c) * hw;
      cd::scale_plane2(xp + off, yp + off, cg[n * channels + c], sg + n * hw, hw, stream);
    }
  };
  cd::for_samples(
      s.n, x.numel(),
      [&](std::int64_t begin, std::int64_t end) {
        // One sample at a time, as SE's pool_excite_scale (channel_kernels.hpp) and for the
        // same reason: each pass re-reads a sample that is still in the caches.
        for (std::int64_t n = begin; n < end; ++n) {
          pool(n, 0, channels);
          channel_excite(n);
          reduce(n, 0, hw);
          pad(n);
          spatial_excite(n, 0, s.h);
          scale(n, 0, channels);
        }
        if (stream) cd::store_fence();
      },
      [&](std::int64_t n) {
        cd::parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) { pool(n, b, e); });
        channel_excite(n);
        cd::parallel_chunks(hw, [&](std::int64_t b, std::int64_t e) { reduce(n, b, e); });
        pad(n);
        cd::parallel_chunks(s.h, [&](std::int64_t b, std::int64_t e) { spatial_excite(n, b, e); });
        cd::parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) {
          scale(n, b, e);
          if (stream) cd::store_fence();
        });
      });
  return {y, channel_gate, spatial_gate};
}

}  // namespace cvattn::functional

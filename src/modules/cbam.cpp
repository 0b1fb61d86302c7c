#include "cvattn/modules/cbam.hpp"

#include <sstream>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "modules/detail/channel_gate.hpp"
#include "modules/detail/channel_kernels.hpp"
#include "modules/detail/key_scope.hpp"
#include "modules/detail/reduced_channels.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace cvattn {
namespace {

constexpr const char* kWhere = "Cbam::forward";
// Pixels per block of the channel-reduce pass: the running sum and max of a block (2 x 4 KiB)
// stay in L1 while all C planes stream through.
constexpr std::int64_t kPixelBlock = 1024;

}  // namespace

CbamOptions CbamOptions::from_state_dict(const StateDict& dict, const std::string& prefix) {
  if (!prefix.empty()) {
    return detail::with_key_scope(dict, prefix,
                                  [](const StateDict& d) { return from_state_dict(d); });
  }
  const char* where = "CbamOptions::from_state_dict";
  const Shape& w1 = detail::require_conv1x1(dict, "channel.fc1.weight", where);
  const Shape& wc =
      detail::require_shape(dict, "spatial.conv.conv.weight", {1, 2, kAny, kAny}, where);
  CVATTN_CHECK(wc[2] == wc[3], ValueError, where,
               ": 'spatial.conv.conv.weight' expected [1, 2, k, k] (a square kernel), got ",
               to_string(wc));
  return CbamOptions(w1[1])
      .rd_channels(w1[0])
      .spatial_kernel_size(wc[2])
      .mlp_bias(dict.contains("channel.fc1.bias") || dict.contains("channel.fc2.bias"));
}

std::int64_t CbamOptions::reduced_channels() const {
  CVATTN_CHECK(channels_ >= 1, ValueError, "CbamOptions: channels must be >= 1, got ", channels_);
  CVATTN_CHECK(spatial_kernel_size_ >= 1 && spatial_kernel_size_ % 2 == 1 &&
                   spatial_kernel_size_ <= 255,
               ValueError,
               "CbamOptions: spatial_kernel_size must be odd and in [1, 255] (padding (k-1)/2 "
               "keeps H, W), got ",
               spatial_kernel_size_);
  return detail::reduced_channels("CbamOptions", channels_, rd_channels_, rd_ratio_, rd_divisor_,
                                  0.0);
}

Cbam::Cbam(const CbamOptions& options) : options_(options), rd_(options.reduced_channels()) {
  const std::int64_t c = options_.channels();
  const std::int64_t k = options_.spatial_kernel_size();
  fc1_weight_ = register_parameter("channel.fc1.weight", {rd_, c, 1, 1});
  if (options_.mlp_bias()) fc1_bias_ = register_parameter("channel.fc1.bias", {rd_});
  fc2_weight_ = register_parameter("channel.fc2.weight", {c, rd_, 1, 1});
  if (options_.mlp_bias()) fc2_bias_ = register_parameter("channel.fc2.bias", {c});
  conv_weight_ = register_parameter("spatial.conv.conv.weight", {1, 2, k, k});
  bn_weight_ = register_parameter("spatial.conv.bn.weight", {1});
  bn_weight_.fill(1.0f);
  bn_bias_ = register_parameter("spatial.conv.bn.bias", {1});
  bn_mean_ = register_buffer("spatial.conv.bn.running_mean", {1});
  bn_var_ = register_buffer("spatial.conv.bn.running_var", {1});
  bn_var_.fill(1.0f);
  register_buffer("spatial.conv.bn.num_batches_tracked", {}, /*integer=*/true);
}

std::string Cbam::describe() const {
  std::ostringstream out;
  out << "Cbam(channels=" << options_.channels() << ", rd_channels=" << rd_
      << ", spatial_kernel_size=" << options_.spatial_kernel_size()
      << ", mlp_bias=" << (options_.mlp_bias() ? "true" : "false")
      << ", gate_layer=" << to_string(options_.gate_layer()) << ")";
  return out.str();
}

Tensor Cbam::forward(const Tensor& x) const { return run(x, false).output; }

Attended Cbam::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended Cbam::run(const Tensor& x, bool keep_maps) const {
  const std::int64_t channels = options_.channels();
  const Tensor::Nchw s = detail::gate_input(x, channels, kWhere, "the gates pool over them");
  const std::int64_t hw = s.h * s.w;
  const std::int64_t rd = rd_;
  const std::int64_t k = options_.spatial_kernel_size();

  // Everything is allocated before the parallel regions, which must not throw; scratch goes
  // through Tensor so the allocation cap applies to it too.
  Tensor y = Tensor::empty(x.shape());
  Tensor channel_gate = Tensor::empty({s.n, channels});
  Tensor spatial_gate = Tensor::empty({s.n, 1, s.h, s.w});
  Tensor avg = Tensor::empty({s.n, channels});
  Tensor mx = Tensor::empty({s.n, channels});
  Tensor hidden = Tensor::empty({s.n, rd});
  // Per sample: [mean_c, max_c] of the channel-refined tensor, the spatial conv's input.
  Tensor reduced = Tensor::empty({s.n, 2, hw});
  const std::int64_t padded_size = 2 * (s.h + k - 1) * (s.w + k - 1);
  Tensor padded = Tensor::empty({s.n, padded_size});
  const detail::BnAffine bn =
      detail::fold_batch_norm(bn_weight_[0], bn_bias_[0], bn_mean_[0], bn_var_[0]);

  const float* xp = x.data();
  float* yp = y.data();
  float* cg = channel_gate.data();
  float* sg = spatial_gate.data();
  const float* w1 = fc1_weight_.data();
  const float* w2 = fc2_weight_.data();
  const float* b1 = options_.mlp_bias() ? fc1_bias_.data() : nullptr;
  const float* b2 = options_.mlp_bias() ? fc2_bias_.data() : nullptr;
  const float* wc = conv_weight_.data();
  const GateLayer gate_layer = options_.gate_layer();
  const bool stream = y.nbytes() >= detail::kStreamingBytes;

  auto pool = [&](std::int64_t n, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const detail::PlaneStats st = detail::plane_mean_max(xp + (n * channels + c) * hw, hw);
      avg[n * channels + c] = st.mean;
      mx[n * channels + c] = st.max;
    }
  };
  // fc2(ReLU(fc1(v))) for one pooled vector, added into g.
  auto mlp = [&](const float* v, float* h, float* g, bool first) {
    for (std::int64_t r = 0; r < rd; ++r) {
      double acc = detail::dot(w1 + r * channels, v, channels);
      if (b1 != nullptr) acc += b1[r];
      const float hr = static_cast<float>(acc);
      h[r] = hr > 0.0f ? hr : (hr == hr ? 0.0f : hr);  // ReLU keeps NaN, as torch does
    }
    for (std::int64_t c = 0; c < channels; ++c) {
      double acc = detail::dot(w2 + c * rd, h, rd);
      if (b2 != nullptr) acc += b2[c];
      // Each branch is rounded to float before the sum, as fc2(avg) + fc2(max) in PyTorch.
      g[c] = first ? static_cast<float>(acc) : g[c] + static_cast<float>(acc);
    }
  };
  auto channel_excite = [&](std::int64_t n) {
    float* h = hidden.data() + n * rd;
    float* g = cg + n * channels;
    mlp(avg.data() + n * channels, h, g, true);
    mlp(mx.data() + n * channels, h, g, false);
    detail::apply_gate(gate_layer, g, channels);
  };
  // [mean_c, max_c] of x * g over pixels [p0, p1); x * g itself is not stored.
  auto reduce = [&](std::int64_t n, std::int64_t p0, std::int64_t p1) {
    float* mean_c = reduced.data() + n * 2 * hw;
    float* max_c = mean_c + hw;
    for (std::int64_t b = p0; b < p1; b += kPixelBlock) {
      const std::int64_t e = b + kPixelBlock < p1 ? b + kPixelBlock : p1;
      detail::channel_mean_max_scaled(xp + n * channels * hw, cg + n * channels, channels, hw, b,
                                      e, mean_c + b, max_c + b);
    }
  };
  auto pad = [&](std::int64_t n) {
    detail::pad_planes(reduced.data() + n * 2 * hw, k, s.h, s.w, padded.data() + n * padded_size);
  };
  auto spatial_excite = [&](std::int64_t n, std::int64_t row0, std::int64_t row1) {
    float* out = sg + n * hw;
    detail::spatial_conv(padded.data() + n * padded_size, wc, k, s.h, s.w, row0, row1, out);
    float* rows = out + row0 * s.w;
    const std::int64_t count = (row1 - row0) * s.w;
    for (std::int64_t i = 0; i < count; ++i) rows[i] = rows[i] * bn.alpha + bn.beta;
    detail::apply_gate(gate_layer, rows, count);
  };
  // y = (x * g) * s: the only pass that writes y.
  auto scale = [&](std::int64_t n, std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const std::int64_t off = (n * channels + c) * hw;
      detail::scale_plane2(xp + off, yp + off, cg[n * channels + c], sg + n * hw, hw, stream);
    }
  };
  detail::for_samples(
      s.n, x.numel(),
      [&](std::int64_t begin, std::int64_t end) {
        // Software pipeline over the thread's samples: the final scale of sample n (streaming
        // writes) and the pooling of sample n + 1 (reads) share one sweep, so reads and writes
        // overlap as in a memcpy instead of alternating.
        pool(begin, 0, channels);
        for (std::int64_t n = begin; n < end; ++n) {
          channel_excite(n);
          reduce(n, 0, hw);
          pad(n);
          spatial_excite(n, 0, s.h);
          for (std::int64_t c = 0; c < channels; ++c) {
            scale(n, c, c + 1);
            if (n + 1 < end) pool(n + 1, c, c + 1);
          }
        }
        detail::store_fence();
      },
      [&](std::int64_t n) {
        detail::parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) { pool(n, b, e); });
        channel_excite(n);
        detail::parallel_chunks(hw, [&](std::int64_t b, std::int64_t e) { reduce(n, b, e); });
        pad(n);
        detail::parallel_chunks(s.h,
                                [&](std::int64_t b, std::int64_t e) { spatial_excite(n, b, e); });
        detail::parallel_chunks(channels, [&](std::int64_t b, std::int64_t e) {
          scale(n, b, e);
          detail::store_fence();
        });
      });

  Attended result{y, {}};
  if (keep_maps) {
    result.maps.add(maps::kChannelAttention, channel_gate);
    result.maps.add(maps::kSpatialAttention, spatial_gate);
  }
  return result;
}

}  // namespace cvattn

#include "cvattn/modules/selective_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <opencv2/core/hal/intrin.hpp>
#include <sstream>

#include "core/parallel_for.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/core/make_divisible.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/conv.hpp"
#include "functional/detail/conv_kernels.hpp"
#include "modules/detail/key_scope.hpp"
#include "modules/detail/state_dict_shapes.hpp"

namespace cvattn {
namespace {

namespace F = cvattn::functional;

constexpr const char* kOptions = "SelectiveKernelOptions";
constexpr const char* kForward = "SelectiveKernel::forward";
// Bounds that keep every derived size (dilation * (kernel - 1), P * Cout, ...) far from int64
// overflow; real networks stay orders of magnitude below.
constexpr std::int64_t kMaxChannels = (std::int64_t{1} << 31) - 1;
constexpr std::int64_t kMaxKernel = std::int64_t{1} << 15;
constexpr std::int64_t kMaxStrideOrDilation = std::int64_t{1} << 20;
constexpr std::int64_t kMaxPaths = 4096;
// Elements summed in float lanes before folding into the double total: bounds the float error.
constexpr std::int64_t kBlock = 2048;
// Largest dilation run as polyphase sub-images (its row pointers live in fixed arrays); larger
// ones go to conv2d as they are.
constexpr std::int64_t kMaxPolyphase = 16;

std::string list_string(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// ReLU that keeps NaN, as torch.relu does.
inline float relu(float v) { return v <= 0.0f ? 0.0f : v; }

// sum over positions [0, hw) of sum_p relu(f[p][offset + i]), in float lanes per block and
// double across blocks (PyTorch sums the paths first, then takes the spatial mean).
double relu_path_sum(const float* const* f, std::int64_t offset, std::int64_t paths,
                     std::int64_t hw) {
  double total = 0.0;
  std::int64_t i = 0;
#if CV_SIMD128
  const cv::v_float32x4 zero = cv::v_setzero_f32();
  const std::int64_t vec_end = hw - hw % 8;
  while (i < vec_end) {
    const std::int64_t block_end = std::min(vec_end, i + kBlock);
    cv::v_float32x4 s0 = zero, s1 = zero;
    for (; i < block_end; i += 8) {
      // max(0, v) returns v when v is NaN (maxps returns its second operand).
      const float* f0 = f[0] + offset + i;
      cv::v_float32x4 t0 = cv::v_max(zero, cv::v_load(f0));
      cv::v_float32x4 t1 = cv::v_max(zero, cv::v_load(f0 + 4));
      for (std::int64_t p = 1; p < paths; ++p) {
        const float* fp = f[p] + offset + i;
        t0 += cv::v_max(zero, cv::v_load(fp));
        t1 += cv::v_max(zero, cv::v_load(fp + 4));
      }
      s0 += t0;
      s1 += t1;
    }
    total += static_cast<double>(cv::v_reduce_sum(s0 + s1));
  }
#endif
  for (; i < hw; ++i) {
    float t = relu(f[0][offset + i]);
    for (std::int64_t p = 1; p < paths; ++p) t += relu(f[p][offset + i]);
    total += static_cast<double>(t);
  }
  return total;
}

// y[i] = sum_p w[p * w_stride] * relu(f[p][offset + i]) for i < hw; y may alias f[0] + offset.
void select_paths(const float* const* f, std::int64_t offset, const float* w, std::int64_t w_stride,
                  std::int64_t paths, std::int64_t hw, float* y) {
  const float w0 = w[0];
  const float* f0 = f[0] + offset;
  if (paths == 2) {  // the common case, in one vectorised pass
    const float w1 = w[w_stride];
    const float* f1 = f[1] + offset;
    for (std::int64_t i = 0; i < hw; ++i) y[i] = w0 * relu(f0[i]) + w1 * relu(f1[i]);
    return;
  }
  for (std::int64_t i = 0; i < hw; ++i) y[i] = w0 * relu(f0[i]);
  for (std::int64_t p = 1; p < paths; ++p) {
    const float wp = w[p * w_stride];
    const float* fp = f[p] + offset;
    for (std::int64_t i = 0; i < hw; ++i) y[i] += wp * relu(fp[i]);
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// A stride-1 3x3 conv with dilation d and padding d reads, for output pixel (q*d + a, r*d + b),
// only input pixels with the same residues (a, b) mod d, at rows q-1..q+1 and columns r-1..r+1 of
// that sub-image. So it equals a plain 3x3 conv with padding 1 over each of the d*d sub-images;
// those go to conv2d as one batch of N*d*d images, where its Winograd path applies (about 1.6x
// faster than im2col at SK's shapes). Sub-images are zero-extended to ceil(H/d) x ceil(W/d): the
// extra row/column stands where the original conv reads padding, so valid outputs are exact.
// Worth it when conv2d would take Winograd on the sub-images; these mirror its thresholds.
bool use_polyphase(std::int64_t stride, const SelectiveKernelOptions::Path& g, std::int64_t cin_g,
                   std::int64_t cout_g, std::int64_t h, std::int64_t w) {
  if (stride != 1 || g.kernel_size != 3 || g.dilation < 2 || g.dilation > kMaxPolyphase ||
      g.padding != g.dilation) {
    return false;
  }
  const std::int64_t hm = ceil_div(h, g.dilation), wm = ceil_div(w, g.dilation);
  return cin_g >= 8 && cout_g >= 8 && ceil_div(hm, 2) * ceil_div(wm, 2) >= 24;
}

// Splits one input row into its d column phases: dst[b][r] = src[r*d + b] for the `full` whole
// groups r < w / d (SIMD for d = 2..4, what keep_3x3 gives for kernels 5, 7, 9).
template <int D>
void deinterleave_row(const float* src, float* const* dst, std::int64_t full) {
  std::int64_t r = 0;
#if CV_SIMD128
  cv::v_float32x4 v[D];
  for (; r + 4 <= full; r += 4) {
    if constexpr (D == 2) cv::v_load_deinterleave(src + r * D, v[0], v[1]);
    if constexpr (D == 3) cv::v_load_deinterleave(src + r * D, v[0], v[1], v[2]);
    if constexpr (D == 4) cv::v_load_deinterleave(src + r * D, v[0], v[1], v[2], v[3]);
    for (int b = 0; b < D; ++b) cv::v_store(dst[b] + r, v[b]);
  }
#endif
  for (; r < full; ++r) {
    for (int b = 0; b < D; ++b) dst[b][r] = src[r * D + b];
  }
}

// The inverse: dst[r*d + b] = src[b][r] for r < full.
template <int D>
void interleave_row(const float* const* src, float* dst, std::int64_t full) {
  std::int64_t r = 0;
#if CV_SIMD128
  cv::v_float32x4 v[D];
  for (; r + 4 <= full; r += 4) {
    for (int b = 0; b < D; ++b) v[b] = cv::v_load(src[b] + r);
    if constexpr (D == 2) cv::v_store_interleave(dst + r * D, v[0], v[1]);
    if constexpr (D == 3) cv::v_store_interleave(dst + r * D, v[0], v[1], v[2]);
    if constexpr (D == 4) cv::v_store_interleave(dst + r * D, v[0], v[1], v[2], v[3]);
  }
#endif
  for (; r < full; ++r) {
    for (int b = 0; b < D; ++b) dst[r * D + b] = src[b][r];
  }
}

void deinterleave_row(const float* src, float* const* dst, std::int64_t d, std::int64_t full) {
  switch (d) {
    case 2:
      deinterleave_row<2>(src, dst, full);
      return;
    case 3:
      deinterleave_row<3>(src, dst, full);
      return;
    case 4:
      deinterleave_row<4>(src, dst, full);
      return;
    default:
      for (std::int64_t r = 0; r < full; ++r) {
        for (std::int64_t b = 0; b < d; ++b) dst[b][r] = src[r * d + b];
      }
  }
}

void interleave_row(const float* const* src, float* dst, std::int64_t d, std::int64_t full) {
  switch (d) {
    case 2:
      interleave_row<2>(src, dst, full);
      return;
    case 3:
      interleave_row<3>(src, dst, full);
      return;
    case 4:
      interleave_row<4>(src, dst, full);
      return;
    default:
      for (std::int64_t r = 0; r < full; ++r) {
        for (std::int64_t b = 0; b < d; ++b) dst[r * d + b] = src[b][r];
      }
  }
}

// conv2d(x[:, c0 : c0 + channels], weight, bias, padding d, dilation d, groups) for a 3x3
// weight, computed over the polyphase sub-images (see use_polyphase) and written to y
// ([N, Cout, H, W]). Sub-image (a, b) of sample n is image (n*d + a)*d + b of the batch given to
// conv2d.
void conv_polyphase(const Tensor& x, std::int64_t c0, std::int64_t channels, const Tensor& weight,
                    const Tensor& bias, std::int64_t d, std::int64_t groups, float* y) {
  const Tensor::Nchw s = x.nchw("x");
  const std::int64_t hm = ceil_div(s.h, d), wm = ceil_div(s.w, d);
  const std::int64_t full = s.w / d;  // column groups with all d phases inside the row
  const std::int64_t subs = d * d;
  // Scratch kept for the next call (core/workspace.hpp); conv2d only reads it.
  const detail::Workspace xs_buffer({s.n * subs, channels, hm, wm}, "SelectiveKernel (polyphase)");
  const Tensor xs = xs_buffer.tensor({s.n * subs, channels, hm, wm});
  const float* src = x.data();
  float* xsd = xs_buffer.data();
  // One task per (sample, row phase a, channel): reads rows a, a+d, ... once, writes d planes.
  detail::parallel_for(s.n * d * channels, [&](std::int64_t t) {
    const std::int64_t c = t % channels;
    const std::int64_t a = (t / channels) % d;
    const std::int64_t n = t / (channels * d);
    const float* plane = src + (n * s.c + c0 + c) * s.h * s.w;
    float* rows[kMaxPolyphase];
    for (std::int64_t q = 0; q < hm; ++q) {
      for (std::int64_t b = 0; b < d; ++b) {
        rows[b] = xsd + ((((n * d + a) * d + b) * channels + c) * hm + q) * wm;
      }
      const std::int64_t iy = q * d + a;
      if (iy >= s.h) {  // the zero extension of a shorter phase
        for (std::int64_t b = 0; b < d; ++b) std::fill(rows[b], rows[b] + wm, 0.0f);
        continue;
      }
      const float* in = plane + iy * s.w;
      deinterleave_row(in, rows, d, full);
      for (std::int64_t b = 0; b < d; ++b) {  // ragged last group, then zero extension
        if (full < wm) rows[b][full] = full * d + b < s.w ? in[full * d + b] : 0.0f;
      }
    }
  });
  const std::int64_t cout = weight.dim(0);
  const detail::Workspace ys({s.n * subs, cout, hm, wm}, "SelectiveKernel (polyphase output)");
  F::detail::conv2d_into(xs, weight, bias, F::Conv2dOptions().padding(1).groups(groups), ys.data());
  const float* ysd = ys.data();
  float* yd = y;
  detail::parallel_for(s.n * cout, [&](std::int64_t t) {
    const std::int64_t o = t % cout;
    const std::int64_t n = t / cout;
    float* out = yd + t * s.h * s.w;
    const float* rows[kMaxPolyphase];
    for (std::int64_t i = 0; i < s.h; ++i) {
      const std::int64_t a = i % d, q = i / d;
      for (std::int64_t b = 0; b < d; ++b) {
        rows[b] = ysd + ((((n * d + a) * d + b) * cout + o) * hm + q) * wm;
      }
      float* row = out + i * s.w;
      interleave_row(rows, row, d, full);
      for (std::int64_t b = 0; full * d + b < s.w; ++b) row[full * d + b] = rows[b][full];
    }
  });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Options

std::int64_t SelectiveKernelOptions::resolved_out_channels() const {
  CVATTN_CHECK(out_channels_ >= 0 && out_channels_ <= kMaxChannels, ValueError, kOptions,
               ": out_channels must be in [0, 2^31) (0: in_channels), got ", out_channels_);
  return out_channels_ != 0 ? out_channels_ : in_channels_;
}

std::int64_t SelectiveKernelOptions::num_paths() const {
  const auto p = static_cast<std::int64_t>(kernel_size_.size());
  CVATTN_CHECK(p >= 1 && p <= kMaxPaths, ValueError, kOptions,
               ": kernel_size needs one entry per path (1 to ", kMaxPaths, "), got ",
               list_string(kernel_size_));
  return p;
}

std::vector<SelectiveKernelOptions::Path> SelectiveKernelOptions::paths() const {
  const std::int64_t count = num_paths();
  CVATTN_CHECK(stride_ >= 1 && stride_ <= kMaxStrideOrDilation, ValueError, kOptions,
               ": stride must be in [1, 2^20], got ", stride_);
  CVATTN_CHECK(dilation_ >= 1 && dilation_ <= kMaxStrideOrDilation, ValueError, kOptions,
               ": dilation must be in [1, 2^20], got ", dilation_);
  std::vector<Path> out;
  for (std::int64_t p = 0; p < count; ++p) {
    const std::int64_t k = kernel_size_[static_cast<std::size_t>(p)];
    CVATTN_CHECK(k >= 3 && k % 2 == 1 && k <= kMaxKernel, ValueError, kOptions,
                 ": kernel_size entries must be odd and in [3, 2^15], got ",
                 list_string(kernel_size_));
    Path path{};
    if (keep_3x3_) {  // a larger kernel becomes a 3x3 with the same reach
      path.kernel_size = 3;
      path.dilation = (dilation_ * (k - 1)) / 2;
    } else {
      path.kernel_size = k;
      path.dilation = dilation_;
    }
    path.padding = ((stride_ - 1) + path.dilation * (path.kernel_size - 1)) / 2;
    out.push_back(path);
  }
  return out;
}

std::int64_t SelectiveKernelOptions::path_in_channels() const {
  CVATTN_CHECK(in_channels_ >= 1 && in_channels_ <= kMaxChannels, ValueError, kOptions,
               ": in_channels must be in [1, 2^31), got ", in_channels_);
  if (!split_input_) return in_channels_;
  const std::int64_t p = num_paths();
  CVATTN_CHECK(in_channels_ % p == 0, ValueError, kOptions, ": split_input needs in_channels (",
               in_channels_, ") divisible by the number of paths (", p, ")");
  return in_channels_ / p;
}

std::int64_t SelectiveKernelOptions::conv_groups() const {
  CVATTN_CHECK(groups_ >= 1, ValueError, kOptions, ": groups must be >= 1, got ", groups_);
  const std::int64_t cout = resolved_out_channels();
  const std::int64_t g = std::min(cout, groups_);
  const std::int64_t cin_p = path_in_channels();
  CVATTN_CHECK(cin_p % g == 0 && cout % g == 0, ValueError, kOptions, ": groups (", g,
               ") must divide the input channels per path (", cin_p, ") and out_channels (", cout,
               ")");
  return g;
}

std::int64_t SelectiveKernelOptions::attn_channels() const {
  CVATTN_CHECK(rd_channels_ >= 0 && rd_channels_ <= kMaxChannels, ValueError, kOptions,
               ": rd_channels must be in [0, 2^31) (0: from rd_ratio), got ", rd_channels_);
  if (rd_channels_ > 0) return rd_channels_;
  CVATTN_CHECK(std::isfinite(rd_ratio_) && rd_ratio_ > 0 && rd_ratio_ <= 1e6, ValueError, kOptions,
               ": rd_ratio must be positive and finite, got ", rd_ratio_);
  return make_divisible(static_cast<double>(resolved_out_channels()) * rd_ratio_, rd_divisor_);
}

void SelectiveKernelOptions::validate() const {
  (void)paths();
  (void)conv_groups();
  (void)attn_channels();
}

SelectiveKernelOptions SelectiveKernelOptions::from_state_dict(
    const StateDict& dict, const std::string& prefix, const std::vector<std::int64_t>& kernel_size,
    std::int64_t stride, std::int64_t dilation, bool split_input, bool keep_3x3,
    std::int64_t in_channels) {
  auto make = [&](const StateDict& d) {
    return from_state_dict(d, kernel_size, stride, dilation, split_input, keep_3x3, in_channels);
  };
  if (prefix.empty()) return make(dict);
  return detail::with_key_scope(dict, prefix, make);
}

SelectiveKernelOptions SelectiveKernelOptions::from_state_dict(
    const StateDict& dict, const std::vector<std::int64_t>& kernel_size, std::int64_t stride,
    std::int64_t dilation, bool split_input, bool keep_3x3, std::int64_t in_channels) {
  constexpr const char* kWhere = "SelectiveKernelOptions::from_state_dict";
  auto conv_key = [](std::int64_t p) { return "paths." + std::to_string(p) + ".conv.weight"; };
  const Shape& w0 = detail::require_shape(dict, conv_key(0), {kAny, kAny, kAny, kAny}, kWhere);
  const std::int64_t cout = w0[0];
  const std::int64_t cin_g = w0[1];
  CVATTN_CHECK(cout >= 1 && cin_g >= 1, ValueError, kWhere, ": '", conv_key(0),
               "' expected [Cout, Cin/groups, k, k] with Cout, Cin/groups >= 1, got ",
               to_string(w0));
  std::int64_t weight_paths = 1;
  while (weight_paths <= kMaxPaths && dict.contains(conv_key(weight_paths))) ++weight_paths;
  CVATTN_CHECK(static_cast<std::int64_t>(kernel_size.size()) == weight_paths, ValueError, kWhere,
               ": kernel_size ", list_string(kernel_size), " gives ", kernel_size.size(),
               " path(s), but the state_dict has ", weight_paths, " (", conv_key(0),
               weight_paths > 1 ? " .. " + conv_key(weight_paths - 1) : std::string(),
               "); pass one kernel size per path");

  SelectiveKernelOptions options(1);
  options.out_channels(cout)
      .kernel_size(kernel_size)
      .stride(stride)
      .dilation(dilation)
      .split_input(split_input)
      .keep_3x3(keep_3x3);
  const std::vector<Path> paths = options.paths();  // validates kernel_size, stride, dilation
  for (std::int64_t p = 0; p < weight_paths; ++p) {
    const std::int64_t k = paths[static_cast<std::size_t>(p)].kernel_size;
    const Shape& w = dict.at(conv_key(p)).shape();
    CVATTN_CHECK(w == Shape({cout, cin_g, k, k}), ValueError, kWhere, ": '", conv_key(p),
                 "' expected ", to_string({cout, cin_g, k, k}), " (kernel_size[", p,
                 "] = ", kernel_size[static_cast<std::size_t>(p)],
                 ", keep_3x3 = ", keep_3x3 ? "true" : "false", "), got ", to_string(w));
  }
  const Shape& reduce =
      detail::require_shape(dict, "attn.fc_reduce.weight", {kAny, cout, 1, 1}, kWhere);
  CVATTN_CHECK(reduce[0] >= 1, ValueError, kWhere,
               ": 'attn.fc_reduce.weight' expected [A, Cout, 1, 1] with A >= 1, got ",
               to_string(reduce));
  options.rd_channels(reduce[0]);

  const std::int64_t per_path_inputs = split_input ? weight_paths : 1;
  if (in_channels > 0) {
    options.in_channels(in_channels);
    const std::int64_t cin_p = options.path_in_channels();  // checks divisibility by P
    CVATTN_CHECK(cin_p % cin_g == 0, ValueError, kWhere, ": '", conv_key(0), "' ", to_string(w0),
                 " has ", cin_g, " input channels per group, which must divide the ", cin_p,
                 " input channels of each path (in_channels ", in_channels,
                 ", split_input = ", split_input ? "true" : "false", ")");
    options.groups(cin_p / cin_g);
  } else {
    CVATTN_CHECK(cin_g <= kMaxChannels / per_path_inputs, ValueError, kWhere, ": '", conv_key(0),
                 "' ", to_string(w0), " implies too many input channels");
    options.in_channels(cin_g * per_path_inputs).groups(1);
  }
  options.validate();
  return options;
}

// ---------------------------------------------------------------------------------------------
// Module

SelectiveKernel::SelectiveKernel(const SelectiveKernelOptions& options)
    : options_(options),
      cin_(options.in_channels()),
      cout_(options.resolved_out_channels()),
      cin_p_(options.path_in_channels()),
      groups_(options.conv_groups()),
      attn_(options.attn_channels()) {
  options_.validate();
  const std::vector<SelectiveKernelOptions::Path> geometry = options_.paths();
  const std::int64_t count = static_cast<std::int64_t>(geometry.size());
  // Registration order is timm's state_dict order.
  auto batch_norm = [&](const std::string& prefix, std::int64_t c, Tensor& weight, Tensor& bias,
                        Tensor& mean, Tensor& var) {
    // A fresh BatchNorm2d is the identity (weight 1, running_var 1), as in PyTorch.
    weight = register_parameter(prefix + ".weight", {c});
    weight.fill(1.0f);
    bias = register_parameter(prefix + ".bias", {c});
    mean = register_buffer(prefix + ".running_mean", {c});
    var = register_buffer(prefix + ".running_var", {c});
    var.fill(1.0f);
    register_buffer(prefix + ".num_batches_tracked", {}, /*integer=*/true);
  };
  paths_.resize(static_cast<std::size_t>(count));
  for (std::int64_t p = 0; p < count; ++p) {
    PathState& s = paths_[static_cast<std::size_t>(p)];
    s.geometry = geometry[static_cast<std::size_t>(p)];
    const std::string prefix = "paths." + std::to_string(p);
    const std::int64_t k = s.geometry.kernel_size;
    s.conv_weight = register_parameter(prefix + ".conv.weight", {cout_, cin_p_ / groups_, k, k});
    batch_norm(prefix + ".bn", cout_, s.bn_weight, s.bn_bias, s.bn_mean, s.bn_var);
  }
  reduce_weight_ = register_parameter("attn.fc_reduce.weight", {attn_, cout_, 1, 1});
  batch_norm("attn.bn", attn_, attn_bn_weight_, attn_bn_bias_, attn_bn_mean_, attn_bn_var_);
  CVATTN_CHECK(cout_ <= std::numeric_limits<std::int64_t>::max() / count, ValueError, kOptions,
               ": ", count, " paths of ", cout_, " channels are too many");
  select_weight_ = register_parameter("attn.fc_select.weight", {count * cout_, attn_, 1, 1});
  fold();
}

void SelectiveKernel::on_weights_loaded() { fold(); }

void SelectiveKernel::fold() {
  for (PathState& s : paths_) {
    auto folded =
        F::fold_batch_norm(s.conv_weight, {}, s.bn_mean, s.bn_var, s.bn_weight, s.bn_bias);
    s.weight = folded.first;
    s.bias = folded.second;
  }
  auto folded = F::fold_batch_norm(reduce_weight_.reshape({attn_, cout_}), {}, attn_bn_mean_,
                                   attn_bn_var_, attn_bn_weight_, attn_bn_bias_);
  reduce_folded_weight_ = folded.first;
  reduce_folded_bias_ = folded.second;
}

std::string SelectiveKernel::describe() const {
  std::ostringstream out;
  out << "SelectiveKernel(in_channels=" << cin_ << ", out_channels=" << cout_
      << ", kernel_size=" << list_string(options_.kernel_size()) << ", stride=" << options_.stride()
      << ", dilation=" << options_.dilation() << ", groups=" << groups_
      << ", attn_channels=" << attn_ << ", keep_3x3=" << (options_.keep_3x3() ? "true" : "false")
      << ", split_input=" << (options_.split_input() ? "true" : "false") << ")";
  return out.str();
}

Tensor SelectiveKernel::forward(const Tensor& x) const { return run(x, false).output; }

Attended SelectiveKernel::forward_with_maps(const Tensor& x) const { return run(x, true); }

Attended SelectiveKernel::run(const Tensor& x, bool keep_maps) const {
  check_shape(x, {kAny, cin_, kAny, kAny}, "x", kForward);
  const Tensor::Nchw s = x.nchw("x");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, kForward, ": tensor 'x' expected H, W >= 1, got ",
               to_string(x.shape()));
  const std::int64_t paths = num_paths();
  const bool split = options_.split_input();

  // One conv per path (BN folded in), ReLU deferred to the fused tail below. The result of
  // path 0 becomes the output; the others live in scratch kept across calls.
  std::vector<Tensor> f;
  f.reserve(static_cast<std::size_t>(paths));
  std::vector<std::unique_ptr<detail::Workspace>> scratch;
  for (std::int64_t p = 0; p < paths; ++p) {
    const PathState& ps = paths_[static_cast<std::size_t>(p)];
    const auto& g = ps.geometry;
    const std::int64_t c0 = split ? p * cin_p_ : 0;
    if (s.n > 0 &&
        use_polyphase(options_.stride(), g, cin_p_ / groups_, cout_ / groups_, s.h, s.w)) {
      const Shape shape{s.n, cout_, s.h, s.w};
      Tensor out;
      if (p == 0) {
        out = Tensor::empty(shape);
      } else {
        scratch.push_back(std::make_unique<detail::Workspace>(shape, "SelectiveKernel (path)"));
        out = scratch.back()->tensor(shape);
      }
      conv_polyphase(x, c0, cin_p_, ps.weight, ps.bias, g.dilation, groups_, out.data());
      f.push_back(out);
      continue;
    }
    Tensor xp = x;
    if (split && paths > 1) {
      if (s.n == 1) {  // channels [c0, c0 + Cin_p) of one sample are contiguous
        xp = x.reshape({paths, cin_p_, s.h, s.w}).select0(p).reshape({1, cin_p_, s.h, s.w});
      } else {
        xp = Tensor::empty({s.n, cin_p_, s.h, s.w});
        const std::int64_t block = cin_p_ * s.h * s.w;
        for (std::int64_t n = 0; n < s.n; ++n) {
          const float* src = x.data() + (n * paths + p) * block;
          std::copy(src, src + block, xp.data() + n * block);
        }
      }
    }
    f.push_back(F::conv2d(xp, ps.weight, ps.bias,
                          F::Conv2dOptions()
                              .stride(options_.stride())
                              .padding(g.padding)
                              .dilation(g.dilation)
                              .groups(groups_)));
  }
  const std::int64_t ho = f[0].dim(2), wo = f[0].dim(3);
  const std::int64_t hw = ho * wo;
  const std::int64_t planes = s.n * cout_;

  // Everything is allocated before the parallel regions, which must not throw.
  std::vector<double> pooled(static_cast<std::size_t>(planes));
  std::vector<float> hidden(static_cast<std::size_t>(attn_));
  std::vector<float> logits(static_cast<std::size_t>(paths * cout_));
  Tensor attention = Tensor::empty({s.n, paths, cout_});
  std::vector<const float*> f_data(static_cast<std::size_t>(paths));
  for (std::size_t p = 0; p < f.size(); ++p) f_data[p] = f[p].data();
  const float* const* fd = f_data.data();

  // s[n, c] = mean_hw sum_p relu(f_p): a read-only pass, ReLU applied on the fly.
  detail::parallel_for(planes, [&](std::int64_t plane) {
    pooled[static_cast<std::size_t>(plane)] =
        relu_path_sum(fd, plane * hw, paths, hw) / static_cast<double>(hw);
  });

  // The attention of each sample: a few thousand multiply-adds, serial.
  const float* wr = reduce_folded_weight_.data();  // [A, Cout], attn.bn folded in
  const float* br = reduce_folded_bias_.data();
  const float* wsel = select_weight_.data();  // [P * Cout, A]
  for (std::int64_t n = 0; n < s.n; ++n) {
    const double* sn = pooled.data() + n * cout_;
    for (std::int64_t a = 0; a < attn_; ++a) {
      double acc = br[a];
      const float* row = wr + a * cout_;
      for (std::int64_t c = 0; c < cout_; ++c) acc += static_cast<double>(row[c]) * sn[c];
      hidden[static_cast<std::size_t>(a)] = relu(static_cast<float>(acc));
    }
    for (std::int64_t j = 0; j < paths * cout_; ++j) {
      double acc = 0.0;
      const float* row = wsel + j * attn_;
      for (std::int64_t a = 0; a < attn_; ++a) {
        acc += static_cast<double>(row[a]) * hidden[static_cast<std::size_t>(a)];
      }
      logits[static_cast<std::size_t>(j)] = static_cast<float>(acc);
    }
    float* wn = attention.data() + n * paths * cout_;
    for (std::int64_t c = 0; c < cout_; ++c) {
      // softmax over p of logits[p * Cout + c]; a NaN logit makes the whole column NaN.
      float m = logits[static_cast<std::size_t>(c)];
      for (std::int64_t p = 1; p < paths; ++p) {
        m = std::max(m, logits[static_cast<std::size_t>(p * cout_ + c)]);
      }
      float sum = 0.0f;
      for (std::int64_t p = 0; p < paths; ++p) {
        const float e = std::exp(logits[static_cast<std::size_t>(p * cout_ + c)] - m);
        wn[p * cout_ + c] = e;
        sum += e;
      }
      for (std::int64_t p = 0; p < paths; ++p) wn[p * cout_ + c] /= sum;
    }
  }

  // y = sum_p w_p * relu(f_p), written over f_0 (no one else holds it).
  Tensor y = f[0];
  float* yd = y.data();
  const float* att = attention.data();
  detail::parallel_for(planes, [&](std::int64_t plane) {
    const std::int64_t n = plane / cout_;
    const std::int64_t c = plane % cout_;
    select_paths(fd, plane * hw, att + n * paths * cout_ + c, cout_, paths, hw, yd + plane * hw);
  });

  Attended result{y, {}};
  if (keep_maps) result.maps.add(maps::kAttention, attention);
  return result;
}

}  // namespace cvattn

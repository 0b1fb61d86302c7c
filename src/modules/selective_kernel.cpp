#include "cvattn/modules/selective_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/core/make_divisible.hpp"
#include "cvattn/functional/batch_norm.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/functional/selective_kernel.hpp"
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

std::string list_string(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
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
    s.conv = F::Conv2dWeight(s.weight, F::Conv2dOptions()
                                           .stride(options_.stride())
                                           .padding(s.geometry.padding)
                                           .dilation(s.geometry.dilation)
                                           .groups(groups_));
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

  // One conv per path (BN folded in; conv2d takes its polyphase path for dilated 3x3 convs),
  // ReLU deferred to selective_kernel_attention, which writes the output over path 0's result.
  std::vector<Tensor> f;
  f.reserve(static_cast<std::size_t>(paths));
  for (std::int64_t p = 0; p < paths; ++p) {
    const PathState& ps = paths_[static_cast<std::size_t>(p)];
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
    f.push_back(F::conv2d(xp, ps.conv, ps.bias));
  }
  const F::SelectiveKernelFused fused = F::selective_kernel_attention(
      f, reduce_folded_weight_, reduce_folded_bias_, select_weight_, /*overwrite_first_path=*/true);
  const Tensor& y = fused.output;
  const Tensor& attention = fused.attention;

  Attended result{y, {}};
  if (keep_maps) result.maps.add(maps::kAttention, attention);
  return result;
}

}  // namespace cvattn

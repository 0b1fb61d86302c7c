#pragma once
// SelectiveKernel: timm's SelectiveKernel (layers/selective_kernel.py, SKNet), docs/modules.md §5.
//
//   x_p = split_input ? x[:, p*Cin_p : (p+1)*Cin_p] : x        p = 0..P-1
//   f_p = ReLU(BN_p(conv_p(x_p)))                              [N, Cout, Ho, Wo]
//   s   = mean_hw(sum_p f_p)                                   [N, Cout]
//   t   = fc_select(ReLU(bn(fc_reduce(s))))                    [N, P*Cout] (1x1 convs, no bias)
//   w   = softmax over p of t[:, p*Cout + c]                   map "attention" [N, P, Cout]
//   y   = sum_p w[:, p, c] * f_p                               [N, Cout, Ho, Wo]
//
// Path p: keep_3x3 ? (3x3, dilation (dilation*(k_p-1))//2) : (k_p x k_p, dilation), stride,
// groups min(Cout, groups), timm's symmetric padding ((stride-1) + dil*(kernel-1))//2.
//
// state_dict keys (timm's, unchanged): paths.<p>.conv.weight [Cout, Cin_p/groups, kernel, kernel],
// paths.<p>.bn.{weight,bias,running_mean,running_var} [Cout] (+ num_batches_tracked),
// attn.fc_reduce.weight [A, Cout, 1, 1], attn.bn.* [A], attn.fc_select.weight [P*Cout, A, 1, 1].
// After loading, every BatchNorm is folded into the conv before it, so a path runs as one
// conv with bias followed by ReLU.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/conv.hpp"

namespace cvattn {

class CVATTN_EXPORT SelectiveKernelOptions {
 public:
  explicit SelectiveKernelOptions(std::int64_t in_channels) : in_channels_(in_channels) {}

  // Options for timm's weights as they are: Cout from paths.0.conv.weight, P from the number of
  // paths.<p>.conv.weight keys, A (attention width) from attn.fc_reduce.weight, so checkpoints of
  // old timm (A = max(Cout/16, 32)) or of any rd_ratio/rd_divisor load alike. kernel_size (one
  // entry per path, as a timm list), stride, dilation, split_input and keep_3x3 leave no trace in
  // the weights beyond the kernel sizes, which are checked against them. groups follows from
  // in_channels: Cin_p / weight.shape[1] with Cin_p = split_input ? Cin/P : Cin; with
  // in_channels = 0 (unknown) groups is taken as 1 and Cin derived from the weight.
  // ValueError naming the key on a missing or inconsistent tensor.
  [[nodiscard]] static SelectiveKernelOptions from_state_dict(
      const StateDict& dict, const std::vector<std::int64_t>& kernel_size = {3, 5},
      std::int64_t stride = 1, std::int64_t dilation = 1, bool split_input = true,
      bool keep_3x3 = true, std::int64_t in_channels = 0);
  // Keeps `from_state_dict(dict, {3, 5})` unambiguous next to the prefix overload below.
  [[nodiscard]] static SelectiveKernelOptions from_state_dict(
      const StateDict& dict, std::initializer_list<std::int64_t> kernel_size,
      std::int64_t stride = 1, std::int64_t dilation = 1, bool split_input = true,
      bool keep_3x3 = true, std::int64_t in_channels = 0) {
    return from_state_dict(dict, std::vector<std::int64_t>(kernel_size), stride, dilation,
                           split_input, keep_3x3, in_channels);
  }
  // The same from the keys under `prefix` (the library-wide order: dict, prefix, extras...).
  [[nodiscard]] static SelectiveKernelOptions from_state_dict(
      const StateDict& dict, const std::string& prefix,
      const std::vector<std::int64_t>& kernel_size = {3, 5}, std::int64_t stride = 1,
      std::int64_t dilation = 1, bool split_input = true, bool keep_3x3 = true,
      std::int64_t in_channels = 0);

  // One convolution path after timm's rewriting of kernel_size / dilation.
  struct Path {
    std::int64_t kernel_size;
    std::int64_t dilation;
    std::int64_t padding;
  };

  // Derived configuration; each throws ValueError on invalid options.
  [[nodiscard]] std::int64_t resolved_out_channels() const;  // out_channels or in_channels
  [[nodiscard]] std::int64_t num_paths() const;
  [[nodiscard]] std::vector<Path> paths() const;
  [[nodiscard]] std::int64_t path_in_channels() const;  // Cin_p
  [[nodiscard]] std::int64_t conv_groups() const;       // min(Cout, groups)
  // A: rd_channels if non-zero, else make_divisible(Cout * rd_ratio, rd_divisor) (limit 0.9).
  [[nodiscard]] std::int64_t attn_channels() const;
  // Checks every option (also done by the SelectiveKernel constructor).
  void validate() const;

  CVATTN_ARG(std::int64_t, in_channels);
  CVATTN_ARG(std::int64_t, out_channels) = 0;  // 0: in_channels (timm's None)
  // Per-path kernel sizes, odd and >= 3, as a timm list: {3, 5} is two paths, {5} one path
  // (timm's int k is {k, k}).
  CVATTN_ARG(std::vector<std::int64_t>, kernel_size) = {3, 5};
  CVATTN_ARG(std::int64_t, stride) = 1;
  CVATTN_ARG(std::int64_t, dilation) = 1;
  CVATTN_ARG(std::int64_t, groups) = 1;
  CVATTN_ARG(double, rd_ratio) = 1.0 / 16.0;
  CVATTN_ARG(std::int64_t, rd_channels) = 0;  // 0: computed from rd_ratio (timm's None)
  CVATTN_ARG(std::int64_t, rd_divisor) = 8;
  CVATTN_ARG(bool, keep_3x3) = true;
  CVATTN_ARG(bool, split_input) = true;
};

class CVATTN_EXPORT SelectiveKernel final : public UnaryModule {
 public:
  // Parameters start as PyTorch's fresh modules would after zeroing the convs (BatchNorms are
  // identities); load them with load_state_dict. ValueError on invalid options.
  explicit SelectiveKernel(const SelectiveKernelOptions& options);

  // x [N, Cin, H, W] with H, W >= 1 -> y [N, Cout, Ho, Wo],
  // Ho = (H + 2*padding - dil*(kernel-1) - 1) / stride + 1 (equal for every path).
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output plus map "attention" [N, P, Cout] (softmax over the paths).
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const SelectiveKernelOptions& options() const noexcept { return options_; }
  [[nodiscard]] std::int64_t num_paths() const noexcept {
    return static_cast<std::int64_t>(paths_.size());
  }
  [[nodiscard]] std::int64_t out_channels() const noexcept { return cout_; }
  [[nodiscard]] std::int64_t attn_channels() const noexcept { return attn_; }

 protected:
  void on_weights_loaded() override;

 private:
  struct PathState {
    SelectiveKernelOptions::Path geometry;
    Tensor conv_weight, bn_weight, bn_bias, bn_mean, bn_var;  // as loaded
    Tensor weight, bias;                                      // BN folded in
    functional::Conv2dWeight conv;  // weight with the path's options, transforms made once
  };
  [[nodiscard]] Attended run(const Tensor& x, bool keep_maps) const;
  void fold();

  SelectiveKernelOptions options_;
  std::int64_t cin_, cout_, cin_p_, groups_, attn_;
  std::vector<PathState> paths_;
  Tensor reduce_weight_, attn_bn_weight_, attn_bn_bias_, attn_bn_mean_, attn_bn_var_;
  Tensor select_weight_;
  Tensor reduce_folded_weight_, reduce_folded_bias_;  // fc_reduce with attn.bn folded in
};

}  // namespace cvattn

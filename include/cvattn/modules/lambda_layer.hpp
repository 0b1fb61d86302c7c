#pragma once
// LambdaLayer: timm's lambda layer (layers/lambda_layer.py; LambdaNetworks, Bello 2021),
// intra-depth u = 1. With M = H*W positions:
//
//   q, k, v = split(qkv(x))                 1x1 conv: heads*K | K | V channels
//   q = BN(q), v = BN(v), k = softmax_M(k)  (inference-mode BatchNorm)
//   lam_c = k v^T                           content lambda [K, V], shared by all positions
//   lam_p[m] = conv_lambda(v) at m          r given: an r x r conv (K kernels) on each v channel
//            = sum_n E[m, n] v[n]           r = 0 (timm's None): relative embeddings
//                                           E[m, n] = pos_emb[y_n - y_m + H-1, x_n - x_m + W-1]
//   y[h*V + c, m] = q[h, m] . (lam_c + lam_p[m])[:, c];  y = AvgPool2d(2, 2)(y) when stride 2
//
// There is no attention map (a lambda is a linear function of the context, not a
// distribution); forward_with_maps returns none.
//
// state_dict keys: qkv.weight [heads*K + K + V, dim, 1, 1], qkv.bias (qkv_bias),
// norm_q.{weight, bias, running_mean, running_var, num_batches_tracked} [heads*K],
// norm_v.* [V], and conv_lambda.weight [K, 1, r, r, 1] + conv_lambda.bias [K] (r > 0) or
// pos_emb [2H - 1, 2W - 1, K] (r = 0).
#include <cstdint>
#include <string>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT LambdaLayerOptions {
 public:
  explicit LambdaLayerOptions(std::int64_t dim) : dim_(dim) {}

  // Everything but stride: dim from qkv.weight, V from norm_v, K from conv_lambda.weight or
  // pos_emb, num_heads = norm_q width / K, r from conv_lambda.weight (0 with pos_emb),
  // feat_size from pos_emb, qkv_bias from qkv.bias. ValueError naming the key when a tensor is
  // missing or malformed.
  [[nodiscard]] static LambdaLayerOptions from_state_dict(const StateDict& dict,
                                                          const std::string& prefix = "");

  struct Dims {
    std::int64_t dim_out, dim_qk, dim_v;
  };
  // ValueError on invalid options.
  [[nodiscard]] Dims dims() const;

  CVATTN_ARG(std::int64_t, dim);
  CVATTN_ARG(std::int64_t, dim_out) = 0;    // 0: dim; timm needs dim_out == dim
  CVATTN_ARG(Pair2, feat_size) = Pair2(0);  // required when r == 0
  CVATTN_ARG(std::int64_t, stride) = 1;     // 1 or 2
  CVATTN_ARG(std::int64_t, num_heads) = 4;
  CVATTN_ARG(std::int64_t, dim_head) = 16;  // 0: make_divisible(dim_out * qk_ratio, 8) / heads
  CVATTN_ARG(std::int64_t, r) = 9;          // odd; 0: relative position embeddings
  CVATTN_ARG(double, qk_ratio) = 1.0;
  CVATTN_ARG(bool, qkv_bias) = false;
};

class CVATTN_EXPORT LambdaLayer final : public UnaryModule {
 public:
  explicit LambdaLayer(const LambdaLayerOptions& options);

  // x [N, dim, H, W] ((H, W) == feat_size when r == 0) -> [N, dim, H/stride, W/stride].
  [[nodiscard]] Tensor forward(const Tensor& x) const override;
  // The same output; no maps.
  [[nodiscard]] Attended forward_with_maps(const Tensor& x) const override;

  [[nodiscard]] std::string describe() const override;
  [[nodiscard]] const LambdaLayerOptions& options() const noexcept { return options_; }
  [[nodiscard]] const LambdaLayerOptions::Dims& dims() const noexcept { return dims_; }

 private:
  LambdaLayerOptions options_;
  LambdaLayerOptions::Dims dims_;
  Tensor qkv_weight_, qkv_bias_;
  Tensor q_weight_, q_bias_, q_mean_, q_var_, v_weight_, v_bias_, v_mean_, v_var_;
  Tensor conv_weight_, conv_bias_, pos_emb_;
};

}  // namespace cvattn

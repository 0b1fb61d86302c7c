#include "cvattn/modules/multihead_attention.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include "cvattn/core/error.hpp"
#include "cvattn/functional/attention.hpp"
#include "cvattn/functional/linear.hpp"
#include "modules/detail/key_scope.hpp"
#include "modules/detail/state_dict_shapes.hpp"
#include "modules/repr.hpp"

namespace cvattn {
namespace {

namespace F = functional;

constexpr const char* kWhere = "MultiheadAttention::forward";
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One mask value as an additive term. MHA's boolean convention: 1 = NOT allowed.
float additive(float m, F::MaskType type, const char* name, std::int64_t i) {
  if (type == F::MaskType::additive) return m;
  CVATTN_CHECK(m == 0.0f || m == 1.0f, ValueError, kWhere, ": tensor '", name,
               "' is boolean and must hold only 0 and 1, got ", m, " at flat index ", i);
  return m == 1.0f ? kNegInf : 0.0f;
}

// Appends `extra` rows to the projected keys or values [B, S, E]: bias (add_bias_kv) first, then
// zeros (add_zero_attn), as PyTorch concatenates them.
Tensor append_rows(const Tensor& x, const Tensor& bias, bool zero) {
  const std::int64_t B = x.dim(0), S = x.dim(1), E = x.dim(2);
  const std::int64_t extra = (bias.defined() ? 1 : 0) + (zero ? 1 : 0);
  Tensor out = Tensor::empty({B, S + extra, E});
  for (std::int64_t b = 0; b < B; ++b) {
    const float* src = x.data() + b * S * E;
    float* dst = out.data() + b * (S + extra) * E;
    std::copy(src, src + S * E, dst);
    dst += S * E;
    if (bias.defined()) dst = std::copy(bias.data(), bias.data() + E, dst);
    if (zero) std::fill(dst, dst + E, 0.0f);
  }
  return out;
}

}  // namespace

MultiheadAttentionOptions MultiheadAttentionOptions::from_state_dict(const StateDict& dict,
                                                                     const std::string& prefix,
                                                                     std::int64_t num_heads) {
  if (prefix.empty()) return from_state_dict(dict, num_heads);
  return detail::with_key_scope(dict, prefix,
                                [&](const StateDict& d) { return from_state_dict(d, num_heads); });
}

MultiheadAttentionOptions MultiheadAttentionOptions::from_state_dict(const StateDict& dict,
                                                                     std::int64_t num_heads) {
  const char* where = "MultiheadAttentionOptions::from_state_dict";
  const Shape& wo = detail::require_shape(dict, "out_proj.weight", {kAny, kAny}, where);
  const std::int64_t E = wo[0];
  CVATTN_CHECK(wo[1] == E, ValueError, where, ": 'out_proj.weight' expected [E, E], got ",
               to_string(wo));
  MultiheadAttentionOptions o(E, num_heads);
  if (!dict.contains("in_proj_weight") && dict.contains("q_proj_weight")) {
    detail::require_shape(dict, "q_proj_weight", {E, E}, where);
    o.kdim(detail::require_shape(dict, "k_proj_weight", {E, kAny}, where)[1]);
    o.vdim(detail::require_shape(dict, "v_proj_weight", {E, kAny}, where)[1]);
  } else {
    detail::require_shape(dict, "in_proj_weight", {3 * E, E}, where);
  }
  o.bias(dict.contains("in_proj_bias") || dict.contains("out_proj.bias"));
  o.add_bias_kv(dict.contains("bias_k") || dict.contains("bias_v"));
  return o;
}

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& options)
    : options_(options) {
  const std::int64_t E = options_.embed_dim(), H = options_.num_heads();
  CVATTN_CHECK(E >= 1 && H >= 1 && E % H == 0, ValueError, "MultiheadAttentionOptions: num_heads (",
               H, ") must be >= 1 and divide embed_dim (", E, ")");
  CVATTN_CHECK(options_.kdim() >= 0 && options_.vdim() >= 0, ValueError,
               "MultiheadAttentionOptions: kdim (", options_.kdim(), ") and vdim (",
               options_.vdim(), ") must be >= 0 (0: embed_dim)");
  // Registration order is PyTorch's state_dict order.
  if (options_.packed()) {
    in_proj_weight_ = register_parameter("in_proj_weight", {3 * E, E});
  } else {
    q_proj_weight_ = register_parameter("q_proj_weight", {E, E});
    k_proj_weight_ = register_parameter("k_proj_weight", {E, options_.key_dim()});
    v_proj_weight_ = register_parameter("v_proj_weight", {E, options_.value_dim()});
  }
  if (options_.bias()) in_proj_bias_ = register_parameter("in_proj_bias", {3 * E});
  if (options_.add_bias_kv()) {
    bias_k_ = register_parameter("bias_k", {1, 1, E});
    bias_v_ = register_parameter("bias_v", {1, 1, E});
  }
  out_proj_weight_ = register_parameter("out_proj.weight", {E, E});
  if (options_.bias()) out_proj_bias_ = register_parameter("out_proj.bias", {E});
}

std::string MultiheadAttention::describe() const {
  std::ostringstream out;
  out << "MultiheadAttention(embed_dim=" << options_.embed_dim()
      << ", num_heads=" << options_.num_heads() << ", bias=" << detail::bool_repr(options_.bias())
      << ", add_bias_kv=" << detail::bool_repr(options_.add_bias_kv())
      << ", add_zero_attn=" << detail::bool_repr(options_.add_zero_attn())
      << ", kdim=" << options_.key_dim() << ", vdim=" << options_.value_dim()
      << ", batch_first=True)";
  return out.str();
}

F::AttentionResult MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                               const Tensor& value,
                                               const MultiheadAttentionCall& call) const {
  const std::int64_t E = options_.embed_dim(), H = options_.num_heads();
  const std::int64_t kdim = options_.key_dim(), vdim = options_.value_dim();
  check_defined(query, "query", kWhere);
  check_defined(key, "key", kWhere);
  check_defined(value, "value", kWhere);
  const bool batched = query.rank() == 3;
  CVATTN_CHECK(query.rank() == 3 || query.rank() == 2, ShapeError, kWhere,
               ": tensor 'query' expected [B, L, ", E, "] or unbatched [L, ", E, "], got ",
               to_string(query.shape()));
  const Tensor q_in = batched ? query : query.reshape({1, query.dim(0), query.dim(1)});
  const std::int64_t B = q_in.dim(0), L = q_in.dim(1);
  check_shape(q_in, {B, L, E}, "query", kWhere);
  CVATTN_CHECK(key.rank() == query.rank() && value.rank() == query.rank(), ShapeError, kWhere,
               ": tensors 'key' ", to_string(key.shape()), " and 'value' ",
               to_string(value.shape()), " expected the rank of 'query' ",
               to_string(query.shape()));
  const Tensor k_in = batched ? key : key.reshape({1, key.dim(0), key.dim(1)});
  const Tensor v_in = batched ? value : value.reshape({1, value.dim(0), value.dim(1)});
  const std::int64_t S0 = k_in.dim(1);
  check_shape(k_in, {B, S0, kdim}, "key", kWhere);
  check_shape(v_in, {B, S0, vdim}, "value", kWhere);

  // Masks, validated before any work. attn_mask is [L, S0] or [B*H, L, S0] (unbatched:
  // [H, L, S0]); key_padding_mask [B, S0] (unbatched: [S0]).
  const Tensor& am = call.attn_mask();
  const Tensor& kpm = call.key_padding_mask();
  const bool am3 = am.defined() && am.rank() == 3;
  if (am.defined()) {
    CVATTN_CHECK(am.rank() == 2 || am.rank() == 3, ShapeError, kWhere,
                 ": tensor 'attn_mask' expected [", L, ", ", S0, "] or [", B * H, ", ", L, ", ", S0,
                 "], got ", to_string(am.shape()));
    if (am3) {
      check_shape(am, {B * H, L, S0}, "attn_mask", kWhere);
    } else {
      check_shape(am, {L, S0}, "attn_mask", kWhere);
    }
  }
  if (kpm.defined()) {
    if (batched) {
      check_shape(kpm, {B, S0}, "key_padding_mask", kWhere);
    } else {
      check_shape(kpm, {S0}, "key_padding_mask", kWhere);
    }
  }

  // Self-attention with the packed in-projection: one product makes Q, K and V side by side
  // ([B, L, 3E], as PyTorch's in_proj_weight does), read in place by the heads.
  const bool self_attention = q_in.data() == k_in.data() && q_in.data() == v_in.data() &&
                              q_in.shape() == k_in.shape() && q_in.shape() == v_in.shape();
  const bool fused =
      options_.packed() && self_attention && !options_.add_bias_kv() && !options_.add_zero_attn();

  // In-projections: the heads stay column blocks of Q, K, V.
  const bool bias = options_.bias();
  Tensor qkv, q, k, v;
  if (fused) {
    qkv = F::linear(q_in, in_proj_weight_, bias ? in_proj_bias_ : Tensor());  // [B, L, 3E]
  } else {
    const Tensor wq = options_.packed() ? in_proj_weight_.slice0(0, E) : q_proj_weight_;
    const Tensor wk = options_.packed() ? in_proj_weight_.slice0(E, 2 * E) : k_proj_weight_;
    const Tensor wv = options_.packed() ? in_proj_weight_.slice0(2 * E, 3 * E) : v_proj_weight_;
    q = F::linear(q_in, wq, bias ? in_proj_bias_.slice0(0, E) : Tensor());
    k = F::linear(k_in, wk, bias ? in_proj_bias_.slice0(E, 2 * E) : Tensor());
    v = F::linear(v_in, wv, bias ? in_proj_bias_.slice0(2 * E, 3 * E) : Tensor());
  }
  const bool zero = options_.add_zero_attn();
  if (options_.add_bias_kv() || zero) {
    k = append_rows(k, options_.add_bias_kv() ? bias_k_ : Tensor(), zero);
    v = append_rows(v, options_.add_bias_kv() ? bias_v_ : Tensor(), zero);
  }
  const std::int64_t S = fused ? L : k.dim(1);

  // One additive mask broadcasting to [B, H, L, S]: [mb, mh, L, S] with mb = B when any mask
  // varies over the batch, mh = H for a per-head attn_mask. Appended keys are always allowed.
  Tensor mask;
  if (am.defined() || kpm.defined()) {
    const std::int64_t mb = (am3 || kpm.defined()) ? B : 1, mh = am3 ? H : 1;
    mask = Tensor::empty({mb, mh, L, S});
    const F::MaskType at = call.attn_mask_type(), kt = call.key_padding_mask_type();
    float* m = mask.data();
    for (std::int64_t b = 0; b < mb; ++b) {
      for (std::int64_t h = 0; h < mh; ++h) {
        const std::int64_t a_off = am3 ? (b * H + h) * L * S0 : 0;
        for (std::int64_t i = 0; i < L; ++i) {
          float* row = m + ((b * mh + h) * L + i) * S;
          for (std::int64_t j = 0; j < S; ++j) {
            float t = 0.0f;
            if (j < S0) {
              if (am.defined()) {
                const std::int64_t idx = a_off + i * S0 + j;
                t += additive(am[idx], at, "attn_mask", idx);
              }
              if (kpm.defined()) t += additive(kpm[b * S0 + j], kt, "key_padding_mask", b * S0 + j);
            }
            row[j] = t;
          }
        }
      }
    }
  }

  const auto opts = F::SdpaOptions().need_weights(call.need_weights());
  // With averaged weights, the kernel averages the heads' maps as it makes them (no
  // [B, H, L, S] round trip); otherwise attn_weights is [B, H, L, S] or undefined.
  const bool average = call.need_weights() && call.average_attn_weights();
  F::AttentionResult heads;
  if (fused) {
    heads = average ? F::scaled_dot_product_attention_qkv_averaged(qkv, H, mask, opts)
                    : F::scaled_dot_product_attention_qkv(qkv, H, mask, opts);
  } else {
    heads = average ? F::scaled_dot_product_attention_heads_averaged(q, k, v, H, mask, opts)
                    : F::scaled_dot_product_attention_heads(q, k, v, H, mask, opts);
  }
  // heads.output is [B, L, E], the heads side by side: out_proj's input.
  F::AttentionResult result;
  result.attn_weights = heads.attn_weights;
  result.output = F::linear(heads.output, out_proj_weight_, out_proj_bias_);  // [B, L, E]
  if (!batched) {
    result.output = result.output.reshape({L, E});
    if (result.attn_weights.defined()) {
      Shape s = result.attn_weights.shape();
      s.erase(s.begin());
      result.attn_weights = result.attn_weights.reshape(s);
    }
  }
  return result;
}

F::AttentionResult MultiheadAttention::forward_maps(const Tensor& x, const Tensor& context,
                                                    const MultiheadAttentionCall& call) const {
  const char* where = "MultiheadAttention::forward_maps";
  const Tensor::Nchw s = x.nchw("x");
  check_shape(x, {kAny, options_.embed_dim(), kAny, kAny}, "x", where);
  CVATTN_CHECK(options_.key_dim() == options_.value_dim(), ValueError, where,
               ": the context map is both key and value, so kdim (", options_.key_dim(),
               ") must equal vdim (", options_.value_dim(), ")");
  check_shape(context, {s.n, options_.key_dim(), kAny, kAny}, "context", where);
  const Tensor tokens = F::flatten_spatial(x);  // [N, H*W, E]
  const Tensor ctx = context.data() == x.data() && context.shape() == x.shape()
                         ? tokens
                         : F::flatten_spatial(context);  // [N, Hc*Wc, kdim]
  F::AttentionResult r = forward(tokens, ctx, ctx, call);
  r.output = F::unflatten_spatial(r.output, s.h, s.w);
  return r;
}

}  // namespace cvattn

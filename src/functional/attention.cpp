#include "cvattn/functional/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/broadcast.hpp"
#include "functional/detail/sdpa_kernel.hpp"
#include "functional/detail/transpose.hpp"

namespace cvattn {
namespace functional {
namespace {

constexpr const char* kSdpa = "scaled_dot_product_attention";
constexpr const char* kSdpaHeads = "scaled_dot_product_attention_heads";
constexpr const char* kSdpaQkv = "scaled_dot_product_attention_qkv";

Shape leading(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// Validates and converts attn_mask to an additive mask (a boolean mask becomes 0 / -inf).
Tensor additive_mask(const Tensor& mask, const SdpaOptions& options, const char* where) {
  if (!mask.defined()) return mask;
  CVATTN_CHECK(!options.is_causal(), ValueError, where,
               ": is_causal=true cannot be combined with an explicit attn_mask");
  if (options.mask_type() == MaskType::additive) return mask;
  Tensor out = Tensor::empty(mask.shape());
  for (std::int64_t i = 0; i < mask.numel(); ++i) {
    const float m = mask[i];
    CVATTN_CHECK(m == 0.0f || m == 1.0f, ValueError, where,
                 ": tensor 'attn_mask' is boolean and must hold only 0 and 1, got ", m,
                 " at flat index ", i);
    out[i] = m == 1.0f ? 0.0f : -std::numeric_limits<float>::infinity();
  }
  return out;
}

float resolve_scale(const SdpaOptions& options, std::int64_t E, const char* where) {
  if (options.scale()) {
    const double s = *options.scale();
    CVATTN_CHECK(std::isfinite(s), ValueError, where, ": scale must be finite, got ", s);
    return static_cast<float>(s);
  }
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(E)));
}

// Fills mask_off / mask_rs / mask_cs of the plan for a mask broadcast to [batch..., L, S].
void plan_mask(detail::SdpaPlan& p, const Tensor& mask, const Shape& batch, const char* where) {
  if (!mask.defined()) return;
  Shape full = batch;
  full.push_back(p.L);
  full.push_back(p.S);
  CVATTN_CHECK(
      mask.rank() <= static_cast<int>(full.size()) && detail::broadcasts_to(mask.shape(), full),
      ShapeError, where, ": tensor 'attn_mask' expected a shape that broadcasts to ",
      to_string(full), ", got ", to_string(mask.shape()));
  Shape m = mask.shape();
  m.insert(m.begin(), full.size() - m.size(), 1);
  const std::int64_t ml = m[m.size() - 2], ms = m.back();
  p.mask = mask.data();
  p.mask_cs = ms == 1 ? 0 : 1;
  p.mask_rs = ml == 1 ? 0 : ms;
  p.mask_off = detail::batch_offsets(Shape(m.begin(), m.end() - 2), batch, ml * ms);
}

}  // namespace

MaskType parse_mask_type(std::string_view word) {
  if (word == "additive" || word == "float") return MaskType::additive;
  if (word == "boolean" || word == "bool") return MaskType::boolean;
  throw ValueError(detail::concat("parse_mask_type: unknown mask type '", std::string(word),
                                  "'; expected additive, float, boolean or bool"));
}

AttentionResult scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                             const Tensor& value, const Tensor& attn_mask,
                                             const SdpaOptions& options) {
  const char* where = kSdpa;
  check_defined(query, "query", where);
  check_defined(key, "key", where);
  check_defined(value, "value", where);
  CVATTN_CHECK(query.rank() >= 2, ShapeError, where,
               ": tensor 'query' expected [B..., L, E] (rank >= 2), got ",
               to_string(query.shape()));
  CVATTN_CHECK(key.rank() >= 2, ShapeError, where,
               ": tensor 'key' expected [B..., S, E] (rank >= 2), got ", to_string(key.shape()));
  CVATTN_CHECK(value.rank() >= 2, ShapeError, where,
               ": tensor 'value' expected [B..., S, Ev] (rank >= 2), got ",
               to_string(value.shape()));
  const std::int64_t L = query.dim(-2), E = query.dim(-1);
  const std::int64_t S = key.dim(-2), Ev = value.dim(-1);
  CVATTN_CHECK(E > 0, ShapeError, where,
               ": tensor 'query' expected a positive embedding size E, got ",
               to_string(query.shape()));
  CVATTN_CHECK(key.dim(-1) == E, ShapeError, where, ": tensor 'key' expected [..., *, ", E,
               "] (E of 'query' ", to_string(query.shape()), "), got ", to_string(key.shape()));
  CVATTN_CHECK(value.dim(-2) == S, ShapeError, where, ": tensor 'value' expected [..., ", S,
               ", *] (S of 'key' ", to_string(key.shape()), "), got ", to_string(value.shape()));
  Shape batch;
  CVATTN_CHECK(detail::broadcast_shapes({leading(query), leading(key), leading(value)}, batch),
               ShapeError, where, ": batch dims of 'query' ", to_string(query.shape()), ", 'key' ",
               to_string(key.shape()), " and 'value' ", to_string(value.shape()),
               " do not broadcast");
  const Tensor mask = additive_mask(attn_mask, options, where);

  detail::SdpaPlan p;
  p.L = L, p.S = S, p.E = E, p.Ev = Ev;
  p.scale = resolve_scale(options, E, where);
  p.causal = options.is_causal();
  Shape out_shape = batch, w_shape = batch;
  out_shape.push_back(L);
  out_shape.push_back(Ev);
  w_shape.push_back(L);
  w_shape.push_back(S);
  AttentionResult result;
  result.output = Tensor::empty(out_shape);
  if (options.need_weights()) result.attn_weights = Tensor::empty(w_shape);
  p.heads = checked_numel(batch, where);
  plan_mask(p, mask, batch, where);
  p.q = query.data(), p.k = key.data(), p.v = value.data();
  p.q_rs = E, p.k_rs = E, p.v_rs = Ev, p.out_rs = Ev;
  p.q_off = detail::batch_offsets(leading(query), batch, L * E);
  p.k_off = detail::batch_offsets(leading(key), batch, S * E);
  p.v_off = detail::batch_offsets(leading(value), batch, S * Ev);
  p.out_off = detail::batch_offsets(batch, batch, L * Ev);
  p.out = result.output.data();
  p.weights = options.need_weights() ? result.attn_weights.data() : nullptr;
  detail::run_sdpa(p);
  return result;
}

namespace {

// Where the heads of Q, K and V are: head h of row r of batch b starts at
// base + (b * rows + r) * rs + h * width (rows L for Q, S for K and V).
struct HeadColumns {
  const float* q;
  const float* k;
  const float* v;
  std::int64_t q_rs, k_rs, v_rs;
};

// The engine run over B x num_heads heads laid out as `at` says; with average, attn_weights is
// the [B, L, S] mean over the heads instead of the [B, H, L, S] maps.
AttentionResult run_heads(const HeadColumns& at, std::int64_t B, std::int64_t L, std::int64_t S,
                          std::int64_t E, std::int64_t Ev, std::int64_t num_heads,
                          const Tensor& attn_mask, const SdpaOptions& options, bool average,
                          const char* where) {
  const Tensor mask = additive_mask(attn_mask, options, where);
  detail::SdpaPlan p;
  p.L = L, p.S = S, p.E = E, p.Ev = Ev;
  p.scale = resolve_scale(options, E, where);
  p.causal = options.is_causal();
  AttentionResult result;
  result.output = Tensor::empty({B, L, num_heads * Ev});
  if (average) {
    result.attn_weights = Tensor::empty({B, L, S});
  } else if (options.need_weights()) {
    result.attn_weights = Tensor::empty({B, num_heads, L, S});
  }
  const Shape batch{B, num_heads};
  p.heads = checked_numel(batch, where);
  plan_mask(p, mask, batch, where);
  p.q = at.q, p.k = at.k, p.v = at.v;
  p.q_rs = at.q_rs, p.k_rs = at.k_rs, p.v_rs = at.v_rs;
  p.out_rs = num_heads * Ev;
  const auto n = static_cast<std::size_t>(p.heads);
  p.q_off.resize(n), p.k_off.resize(n), p.v_off.resize(n), p.out_off.resize(n);
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < num_heads; ++h) {
      const auto i = static_cast<std::size_t>(b * num_heads + h);
      p.q_off[i] = b * L * p.q_rs + h * E;
      p.k_off[i] = b * S * p.k_rs + h * E;
      p.v_off[i] = b * S * p.v_rs + h * Ev;
      p.out_off[i] = b * L * p.out_rs + h * Ev;
    }
  }
  p.out = result.output.data();
  if (average) {
    p.weights_avg = result.attn_weights.data();
    p.avg_group = num_heads;
  } else if (options.need_weights()) {
    p.weights = result.attn_weights.data();
  }
  detail::run_sdpa(p);
  return result;
}

// scaled_dot_product_attention_heads (or _averaged): validation, then the engine.
AttentionResult sdpa_heads(const Tensor& query, const Tensor& key, const Tensor& value,
                           std::int64_t num_heads, const Tensor& attn_mask,
                           const SdpaOptions& options, bool average) {
  const char* where = kSdpaHeads;
  CVATTN_CHECK(num_heads >= 1, ValueError, where, ": num_heads must be positive, got ", num_heads);
  check_rank(query, 3, "query", where);
  const std::int64_t B = query.dim(0), L = query.dim(1);
  CVATTN_CHECK(query.dim(2) > 0 && query.dim(2) % num_heads == 0, ShapeError, where,
               ": tensor 'query' expected [B, L, num_heads*E] with num_heads = ", num_heads,
               " and E >= 1, got ", to_string(query.shape()));
  const std::int64_t E = query.dim(2) / num_heads;
  check_rank(key, 3, "key", where);
  check_shape(key, {B, kAny, query.dim(2)}, "key", where);
  const std::int64_t S = key.dim(1);
  check_rank(value, 3, "value", where);
  check_shape(value, {B, S, kAny}, "value", where);
  CVATTN_CHECK(value.dim(2) % num_heads == 0, ShapeError, where,
               ": tensor 'value' expected [B, S, num_heads*Ev] with num_heads = ", num_heads,
               ", got ", to_string(value.shape()));
  const std::int64_t Ev = value.dim(2) / num_heads;
  const HeadColumns at{query.data(),  key.data(),    value.data(),
                       num_heads * E, num_heads * E, num_heads * Ev};
  return run_heads(at, B, L, S, E, Ev, num_heads, attn_mask, options, average, where);
}

}  // namespace

AttentionResult scaled_dot_product_attention_heads(const Tensor& query, const Tensor& key,
                                                   const Tensor& value, std::int64_t num_heads,
                                                   const Tensor& attn_mask,
                                                   const SdpaOptions& options) {
  return sdpa_heads(query, key, value, num_heads, attn_mask, options, false);
}

AttentionResult scaled_dot_product_attention_heads_averaged(const Tensor& query, const Tensor& key,
                                                            const Tensor& value,
                                                            std::int64_t num_heads,
                                                            const Tensor& attn_mask,
                                                            const SdpaOptions& options) {
  return sdpa_heads(query, key, value, num_heads, attn_mask, options, true);
}

namespace {

AttentionResult sdpa_qkv(const Tensor& qkv, std::int64_t num_heads, const Tensor& attn_mask,
                         const SdpaOptions& options, bool average) {
  const char* where = kSdpaQkv;
  CVATTN_CHECK(num_heads >= 1, ValueError, where, ": num_heads must be positive, got ", num_heads);
  check_rank(qkv, 3, "qkv", where);
  const std::int64_t B = qkv.dim(0), L = qkv.dim(1), width = qkv.dim(2);
  CVATTN_CHECK(width > 0 && width % (3 * num_heads) == 0, ShapeError, where,
               ": tensor 'qkv' expected [B, L, 3*num_heads*E] with num_heads = ", num_heads,
               " and E >= 1, got ", to_string(qkv.shape()));
  const std::int64_t HE = width / 3, E = HE / num_heads;
  const float* base = qkv.data();
  const HeadColumns at{base, base + HE, base + 2 * HE, width, width, width};
  return run_heads(at, B, L, L, E, E, num_heads, attn_mask, options, average, where);
}

}  // namespace

AttentionResult scaled_dot_product_attention_qkv(const Tensor& qkv, std::int64_t num_heads,
                                                 const Tensor& attn_mask,
                                                 const SdpaOptions& options) {
  return sdpa_qkv(qkv, num_heads, attn_mask, options, false);
}

AttentionResult scaled_dot_product_attention_qkv_averaged(const Tensor& qkv, std::int64_t num_heads,
                                                          const Tensor& attn_mask,
                                                          const SdpaOptions& options) {
  return sdpa_qkv(qkv, num_heads, attn_mask, options, true);
}

namespace {

// dst [cols, rows] = src [rows, cols]^T for each of n matrices.
void transpose_batch(const float* src, float* dst, std::int64_t n, std::int64_t rows,
                     std::int64_t cols) {
  detail::parallel_for(n, [&](std::int64_t b) {
    detail::transpose(src + b * rows * cols, dst + b * rows * cols, rows, cols);
  });
}

}  // namespace

Tensor flatten_spatial(const Tensor& x) {
  const auto [n, c, h, w] = x.nchw("x");
  Tensor out = Tensor::empty({n, h * w, c});
  transpose_batch(x.data(), out.data(), n, c, h * w);
  return out;
}

Tensor unflatten_spatial(const Tensor& tokens, std::int64_t height, std::int64_t width) {
  const char* where = "unflatten_spatial";
  CVATTN_CHECK(height >= 0 && width >= 0, ValueError, where,
               ": height and width must be non-negative, got ", height, " x ", width);
  check_rank(tokens, 3, "tokens", where);
  CVATTN_CHECK(height == 0 || width <= std::numeric_limits<std::int64_t>::max() / height,
               ValueError, where, ": height x width overflows");
  const std::int64_t hw = height * width;
  CVATTN_CHECK(tokens.dim(1) == hw, ShapeError, where, ": tensor 'tokens' expected [*, ", hw, " (",
               height, "*", width, "), *], got ", to_string(tokens.shape()));
  const std::int64_t n = tokens.dim(0), c = tokens.dim(2);
  Tensor out = Tensor::empty({n, c, height, width});
  transpose_batch(tokens.data(), out.data(), n, hw, c);
  return out;
}

}  // namespace functional

}  // namespace cvattn

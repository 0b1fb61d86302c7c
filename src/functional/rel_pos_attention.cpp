#include "cvattn/functional/rel_pos_attention.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/activation.hpp"
#include "functional/detail/eigen_maps.hpp"

namespace cvattn::functional {
namespace {

double default_scale(std::optional<double> scale, std::int64_t d, const char* where) {
  const double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(d));
  CVATTN_CHECK(std::isfinite(s), ValueError, where, ": scale must be finite, got ", s);
  return s;
}

// Checks q, k, v [N, C, H, W] of the lambda layer and returns (N, K, V, heads, H, W).
struct LambdaDims {
  std::int64_t n, k, v, heads, h, w;
};
LambdaDims lambda_dims(const Tensor& q, const Tensor& k, const Tensor& v, const char* where) {
  const Tensor::Nchw sk = k.nchw("k");
  check_shape(q, {sk.n, kAny, sk.h, sk.w}, "q", where);
  check_shape(v, {sk.n, kAny, sk.h, sk.w}, "v", where);
  CVATTN_CHECK(sk.c >= 1 && q.dim(1) % sk.c == 0 && q.dim(1) >= 1, ShapeError, where,
               ": q channels ", q.dim(1), " must be a positive multiple of k channels ", sk.c);
  CVATTN_CHECK(v.dim(1) >= 1 && sk.h * sk.w >= 1, ShapeError, where,
               ": v must have channels and positions, got ", to_string(v.shape()));
  return {sk.n, sk.c, v.dim(1), q.dim(1) / sk.c, sk.h, sk.w};
}

// out[b, h*V + c, m] = sum_k q[b, h*K + k, m] * lam[b, k, c]: the content term, written (not
// added) into out. lam = softmax_M(k) @ v^T per sample.
Tensor lambda_content(const Tensor& q, const Tensor& k, const Tensor& v, const LambdaDims& d) {
  const std::int64_t m = d.h * d.w;
  const Tensor ks = softmax(k.reshape({d.n, d.k, m}), 2);
  Tensor out = Tensor::empty({d.n, d.heads * d.v, d.h, d.w});
  const float* kp = ks.data();
  const float* vp = v.data();
  const float* qp = q.data();
  float* op = out.data();
  detail::parallel_for(d.n, [&](std::int64_t b) {
    using detail::attn::cmap;
    using detail::attn::mmap;
    detail::attn::RowMat lam(d.k, d.v);  // [K, V]
    detail::attn::product(mmap(lam.data(), d.k, d.v), cmap(kp + b * d.k * m, d.k, m),
                          cmap(vp + b * d.v * m, d.v, m), false, true);
    for (std::int64_t h = 0; h < d.heads; ++h) {
      detail::attn::product(mmap(op + (b * d.heads + h) * d.v * m, d.v, m),
                            cmap(lam.data(), d.k, d.v),
                            cmap(qp + (b * d.heads + h) * d.k * m, d.k, m), true, false);
    }
  });
  return out;
}

}  // namespace

Tensor rel_pos_logits(const Tensor& q, const Tensor& height_rel, const Tensor& width_rel,
                      std::int64_t num_heads, Pair2 query_size, Pair2 key_size, double multiplier) {
  const char* where = "rel_pos_logits";
  CVATTN_CHECK(num_heads >= 1, ValueError, where, ": num_heads must be >= 1, got ", num_heads);
  CVATTN_CHECK(query_size.h >= 1 && query_size.w >= 1 && key_size.h >= query_size.h &&
                   key_size.w >= query_size.w,
               ValueError, where, ": need 1 <= query size <= key size, got query (", query_size.h,
               ", ", query_size.w, ") and key (", key_size.h, ", ", key_size.w, ")");
  check_shape(q, {kAny, query_size.h * query_size.w, kAny}, "q", where);
  CVATTN_CHECK(q.dim(2) % num_heads == 0 && q.dim(2) >= num_heads, ShapeError, where, ": q width ",
               q.dim(2), " is not a multiple of num_heads ", num_heads);
  const std::int64_t d = q.dim(2) / num_heads;
  check_shape(height_rel, {2 * key_size.h - 1, d}, "height_rel", where);
  check_shape(width_rel, {2 * key_size.w - 1, d}, "width_rel", where);
  const std::int64_t b = q.dim(0), qh = query_size.h, qw = query_size.w, kh = key_size.h,
                     kw = key_size.w, l = qh * qw, s = kh * kw;
  Tensor out = Tensor::empty({b, num_heads, l, s});
  // One GEMM per (sample, head) and axis gives every query's dot with every table row
  // ([L, 2kh-1] and [L, 2kw-1]); the logits then gather from them.
  const std::int64_t rh_cols = 2 * kh - 1, rw_cols = 2 * kw - 1, hd = q.dim(2);
  Tensor rel_h = Tensor::empty({b * num_heads, l, rh_cols});
  Tensor rel_w = Tensor::empty({b * num_heads, l, rw_cols});
  const float* qp = q.data();
  const float* hr = height_rel.data();
  const float* wr = width_rel.data();
  float* rhp = rel_h.data();
  float* rwp = rel_w.data();
  float* op = out.data();
  const float mult = static_cast<float>(multiplier);
  const bool scaled = multiplier != 1.0;
  detail::parallel_for(b * num_heads, [&](std::int64_t bh) {
    using detail::attn::cmap;
    using detail::attn::mmap;
    const std::int64_t bi = bh / num_heads, head = bh % num_heads;
    const auto qm = cmap(qp + bi * l * hd + head * d, l, d, hd);
    detail::attn::product(mmap(rhp + bh * l * rh_cols, l, rh_cols), qm, cmap(hr, rh_cols, d), false,
                          true);
    detail::attn::product(mmap(rwp + bh * l * rw_cols, l, rw_cols), qm, cmap(wr, rw_cols, d), false,
                          true);
  });
  detail::parallel_for(b * num_heads * l, [&](std::int64_t row) {
    const std::int64_t i = row % l, y = i / qw, x = i % qw;
    const float* rh = rhp + row * rh_cols + (kh - 1 - y);
    const float* rw = rwp + row * rw_cols + (kw - 1 - x);
    float* o = op + row * s;
    for (std::int64_t u = 0; u < kh; ++u) {
      const float h = rh[u];
      float* ou = o + u * kw;
      if (scaled) {
        for (std::int64_t v = 0; v < kw; ++v) ou[v] = (h + rw[v]) * mult;
      } else {
        for (std::int64_t v = 0; v < kw; ++v) ou[v] = h + rw[v];
      }
    }
  });
  return out;
}

AttentionResult rel_pos_self_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const Tensor& height_rel, const Tensor& width_rel,
                                       Pair2 feat_size, const RelPosAttentionOptions& options) {
  const char* where = "rel_pos_self_attention";
  const std::int64_t heads = options.num_heads();
  CVATTN_CHECK(heads >= 1, ValueError, where, ": num_heads must be >= 1, got ", heads);
  check_shape(q, {kAny, feat_size.h * feat_size.w, kAny}, "q", where);
  CVATTN_CHECK(q.dim(2) % heads == 0, ShapeError, where, ": q width ", q.dim(2),
               " is not a multiple of num_heads ", heads);
  const double scale = default_scale(options.scale(), q.dim(2) / heads, where);
  const Tensor rel = rel_pos_logits(q, height_rel, width_rel, heads, feat_size, feat_size,
                                    options.scale_pos_embed() ? scale : 1.0);
  return scaled_dot_product_attention_heads(
      q, k, v, heads, rel, SdpaOptions().scale(scale).need_weights(options.need_weights()));
}

AttentionResult halo_attention(const Tensor& q, const Tensor& kv, const Tensor& height_rel,
                               const Tensor& width_rel, const HaloAttentionOptions& options) {
  const char* where = "halo_attention";
  const std::int64_t heads = options.num_heads(), bs = options.block_size(),
                     halo = options.halo_size();
  CVATTN_CHECK(heads >= 1 && bs >= 1 && halo >= 0, ValueError, where,
               ": need num_heads >= 1, block_size >= 1, halo_size >= 0, got ", heads, ", ", bs,
               ", ", halo);
  const Tensor::Nchw skv = kv.nchw("kv");
  const Tensor::Nchw sq = q.nchw("q");
  CVATTN_CHECK(skv.h % bs == 0 && skv.w % bs == 0 && skv.h >= 1 && skv.w >= 1, ShapeError, where,
               ": kv height and width must be multiples of block_size ", bs, ", got ",
               to_string(kv.shape()));
  const std::int64_t nbh = skv.h / bs, nbw = skv.w / bs, nb = nbh * nbw;
  CVATTN_CHECK(sq.n == skv.n && sq.h % nbh == 0 && sq.w % nbw == 0 && sq.h / nbh == sq.w / nbw,
               ShapeError, where, ": q ", to_string(q.shape()), " must tile the ", nbh, " x ", nbw,
               " blocks of kv ", to_string(kv.shape()), " with square query blocks");
  const std::int64_t bq = sq.h / nbh;
  CVATTN_CHECK(sq.c % heads == 0 && sq.c >= heads, ShapeError, where, ": q channels ", sq.c,
               " are not a multiple of num_heads ", heads);
  const std::int64_t d = sq.c / heads;
  CVATTN_CHECK(skv.c % heads == 0 && skv.c / heads > d, ShapeError, where, ": kv channels ", skv.c,
               " must be num_heads ", heads, " x (", d, " key + value channels)");
  const std::int64_t dv = skv.c / heads - d;
  const std::int64_t win = bs + 2 * halo;
  CVATTN_CHECK(win >= bq, ValueError, where, ": query block ", bq, " exceeds the window ", win);
  const double scale = default_scale(options.scale(), d, where);

  const std::int64_t g = sq.n * heads * nb, lq = bq * bq, lk = win * win;
  Tensor qb = Tensor::empty({g, lq, d});
  Tensor kb = Tensor::empty({g, lk, d});
  Tensor vb = Tensor::empty({g, lk, dv});
  const float* qp = q.data();
  const float* kvp = kv.data();
  float* qbp = qb.data();
  float* kbp = kb.data();
  float* vbp = vb.data();
  const std::int64_t qplane = sq.h * sq.w, kvplane = skv.h * skv.w;
  detail::parallel_for(g, [&](std::int64_t gi) {
    const std::int64_t blk = gi % nb, nh = gi / nb;  // nh = n * heads + head
    const std::int64_t n = nh / heads, head = nh % heads;
    const std::int64_t bi = blk / nbw, bj = blk % nbw;
    // Queries: pixel (bi*bq + y, bj*bq + x) of head's channels.
    for (std::int64_t y = 0; y < bq; ++y) {
      for (std::int64_t x = 0; x < bq; ++x) {
        float* dst = qbp + (gi * lq + y * bq + x) * d;
        const float* src = qp + (n * sq.c + head * d) * qplane + (bi * bq + y) * sq.w + bj * bq + x;
        for (std::int64_t c = 0; c < d; ++c) dst[c] = src[c * qplane];
      }
    }
    // Window rows [bi*bs - halo, bi*bs - halo + win), zero outside the map.
    const float* kvbase = kvp + (n * skv.c + head * (d + dv)) * kvplane;
    for (std::int64_t y = 0; y < win; ++y) {
      const std::int64_t iy = bi * bs - halo + y;
      for (std::int64_t x = 0; x < win; ++x) {
        const std::int64_t ix = bj * bs - halo + x;
        float* kd = kbp + (gi * lk + y * win + x) * d;
        float* vd = vbp + (gi * lk + y * win + x) * dv;
        if (iy < 0 || iy >= skv.h || ix < 0 || ix >= skv.w) {
          for (std::int64_t c = 0; c < d; ++c) kd[c] = 0.0f;
          for (std::int64_t c = 0; c < dv; ++c) vd[c] = 0.0f;
          continue;
        }
        const float* src = kvbase + iy * skv.w + ix;
        for (std::int64_t c = 0; c < d; ++c) kd[c] = src[c * kvplane];
        for (std::int64_t c = 0; c < dv; ++c) vd[c] = src[(d + c) * kvplane];
      }
    }
  });
  const Tensor rel = rel_pos_logits(qb, height_rel, width_rel, 1, Pair2(bq), Pair2(win),
                                    options.scale_pos_embed() ? scale : 1.0)
                         .reshape({g, lq, lk});
  const AttentionResult a = scaled_dot_product_attention(
      qb, kb, vb, rel, SdpaOptions().scale(scale).need_weights(options.need_weights()));

  Tensor out = Tensor::empty({sq.n, heads * dv, sq.h, sq.w});
  const float* ap = a.output.data();
  float* op = out.data();
  detail::parallel_for(g, [&](std::int64_t gi) {
    const std::int64_t blk = gi % nb, nh = gi / nb;
    const std::int64_t bi = blk / nbw, bj = blk % nbw;
    for (std::int64_t y = 0; y < bq; ++y) {
      for (std::int64_t x = 0; x < bq; ++x) {
        const float* src = ap + (gi * lq + y * bq + x) * dv;
        float* dst = op + nh * dv * qplane + (bi * bq + y) * sq.w + bj * bq + x;
        for (std::int64_t c = 0; c < dv; ++c) dst[c * qplane] = src[c];
      }
    }
  });
  AttentionResult result{out, {}};
  if (options.need_weights())
    result.attn_weights = a.attn_weights.reshape({sq.n, heads, nb, lq, lk});
  return result;
}

Tensor lambda_conv_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                             const Tensor& weight, const Tensor& bias) {
  const char* where = "lambda_conv_attention";
  const LambdaDims d = lambda_dims(q, k, v, where);
  CVATTN_CHECK((weight.rank() == 5 && weight.dim(4) == 1) || weight.rank() == 4, ShapeError, where,
               ": weight expected [K, 1, r, r, 1] or [K, 1, r, r], got ",
               to_string(weight.shape()));
  check_shape(weight.rank() == 5
                  ? weight
                  : weight.reshape({weight.dim(0), weight.dim(1), weight.dim(2), weight.dim(3), 1}),
              {d.k, 1, kAny, kAny, 1}, "weight", where);
  const std::int64_t r = weight.dim(2);
  CVATTN_CHECK(weight.dim(3) == r && r % 2 == 1, ShapeError, where,
               ": weight must be an odd square r x r kernel, got ", to_string(weight.shape()));
  if (bias.defined()) check_shape(bias, {d.k}, "bias", where);
  const std::int64_t m = d.h * d.w;
  Tensor out = lambda_content(q, k, v, d);
  // Position lambdas: each value channel's plane convolved with the K kernels, as one im2col
  // GEMM per (sample, value channel): patches [M, r*r] times weight^T [r*r, K] -> P [M, K].
  const std::int64_t rr = r * r, pad = r / 2;
  Tensor patches = Tensor::empty({d.n * d.v, m, rr});
  Tensor pos = Tensor::empty({d.n * d.v, m, d.k});
  const float* vp = v.data();
  const float* wp = weight.data();
  const float* bp = bias.defined() ? bias.data() : nullptr;
  float* patch = patches.data();
  float* pp = pos.data();
  const float* qp = q.data();
  float* op = out.data();
  detail::parallel_for(d.n * d.v, [&](std::int64_t bc) {
    using detail::attn::cmap;
    using detail::attn::mmap;
    const float* plane = vp + bc * m;
    float* pt = patch + bc * m * rr;
    // Each kernel row is a run of the plane's row between zero margins: copied as a run, where
    // a bounds test per tap kept the portable build at half the native one's speed
    // (docs/performance.md).
    for (std::int64_t y = 0; y < d.h; ++y) {
      for (std::int64_t x = 0; x < d.w; ++x) {
        float* row = pt + (y * d.w + x) * rr;
        // Taps t with ix = x - pad + t inside [0, W).
        const std::int64_t t0 = std::max<std::int64_t>(0, pad - x);
        const std::int64_t t1 = std::max(t0, std::min(r, d.w + pad - x));
        for (std::int64_t u = 0; u < r; ++u) {
          float* dst = row + u * r;
          const std::int64_t iy = y - pad + u;
          if (iy < 0 || iy >= d.h) {
            std::fill(dst, dst + r, 0.0f);
            continue;
          }
          std::fill(dst, dst + t0, 0.0f);
          std::copy(plane + iy * d.w + x - pad + t0, plane + iy * d.w + x - pad + t1, dst + t0);
          std::fill(dst + t1, dst + r, 0.0f);
        }
      }
    }
    auto pm = mmap(pp + bc * m * d.k, m, d.k);
    detail::attn::product(pm, cmap(pt, m, rr), cmap(wp, d.k, rr), false, true);
    if (bp != nullptr) {
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t kk = 0; kk < d.k; ++kk) pm(i, kk) += bp[kk];
      }
    }
  });
  // out[b, h*V + c, i] += sum_k q[b, h*K + k, i] * P[b*V + c, i, k].
  detail::parallel_for(d.n * d.heads * d.v, [&](std::int64_t idx) {
    const std::int64_t c = idx % d.v, h = (idx / d.v) % d.heads, b = idx / (d.v * d.heads);
    float* o = op + idx * m;
    const float* pc = pp + (b * d.v + c) * m * d.k;
    const float* qh = qp + (b * d.heads + h) * d.k * m;
    for (std::int64_t kk = 0; kk < d.k; ++kk) {
      const float* qk = qh + kk * m;
      for (std::int64_t i = 0; i < m; ++i) o[i] += qk[i] * pc[i * d.k + kk];
    }
  });
  return out;
}

Tensor lambda_rel_pos_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& pos_emb) {
  const char* where = "lambda_rel_pos_attention";
  const LambdaDims d = lambda_dims(q, k, v, where);
  check_shape(pos_emb, {2 * d.h - 1, 2 * d.w - 1, d.k}, "pos_emb", where);
  const std::int64_t m = d.h * d.w;
  Tensor out = lambda_content(q, k, v, d);
  const float* pe = pos_emb.data();
  const float* vp = v.data();
  const float* qp = q.data();
  float* op = out.data();
  // Per-thread scratch, allocated before the parallel region (which must not throw).
  const std::int64_t rows = d.n * m;
  const std::int64_t threads =
      std::max<std::int64_t>(1, std::min<std::int64_t>(detail::max_threads(), rows));
  Tensor scratch = Tensor::empty({threads, m * d.k + d.v * d.k});
  detail::parallel_for(threads, [&](std::int64_t t) {
    using detail::attn::cmap;
    using detail::attn::mmap;
    float* base = scratch.data() + t * (m * d.k + d.v * d.k);  // [M, K]: pos_emb at (yn-ym, xn-xm)
    auto lam = mmap(base + m * d.k, d.v, d.k);
    for (std::int64_t bm = rows * t / threads; bm < rows * (t + 1) / threads; ++bm) {
      const std::int64_t b = bm / m, i = bm % m, ym = i / d.w, xm = i % d.w;
      // The keys of one row yn are one run of pos_emb (x offsets w-1-xm .. 2w-2-xm), copied as a
      // run: a copy per key position ran at the baseline's vector width in the portable build
      // (docs/performance.md, "Zen 5, seventh session").
      for (std::int64_t yn = 0; yn < d.h; ++yn) {
        const float* src = pe + ((yn - ym + d.h - 1) * (2 * d.w - 1) + (d.w - 1 - xm)) * d.k;
        std::copy(src, src + d.w * d.k, base + yn * d.w * d.k);
      }
      detail::attn::product(lam, cmap(vp + b * d.v * m, d.v, m), cmap(base, m, d.k));  // [V, K]
      for (std::int64_t h = 0; h < d.heads; ++h) {
        for (std::int64_t c = 0; c < d.v; ++c) {
          float acc = 0.0f;
          for (std::int64_t kk = 0; kk < d.k; ++kk) {
            acc += qp[((b * d.heads + h) * d.k + kk) * m + i] * lam(c, kk);
          }
          op[((b * d.heads + h) * d.v + c) * m + i] += acc;
        }
      }
    }
  });
  return out;
}

}  // namespace cvattn::functional

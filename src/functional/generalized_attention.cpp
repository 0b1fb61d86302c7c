#include "cvattn/functional/generalized_attention.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/linear.hpp"
#include "cvattn/functional/pooling.hpp"
#include "functional/detail/eigen_maps.hpp"
#include "functional/detail/softmax.hpp"

namespace cvattn::functional {
namespace {

constexpr const char* kWhere = "generalized_attention";

// Python's floor division.
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  const std::int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// x[::s, ::s] (mmcv's AvgPool2d(kernel_size=1, stride=s)).
Tensor subsample(const Tensor& x, std::int64_t s) {
  return s > 1 ? avg_pool2d(x, AvgPool2dOptions(Pair2(1)).stride(Pair2(s))) : x;
}

// F.interpolate(mode='bilinear', align_corners=False) to (oh, ow), PyTorch's CPU arithmetic.
Tensor upsample_bilinear(const Tensor& x, std::int64_t oh, std::int64_t ow) {
  const Tensor::Nchw s = x.nchw("out");
  Tensor y = Tensor::empty({s.n, s.c, oh, ow});
  const float sh = static_cast<float>(s.h) / static_cast<float>(oh);
  const float sw = static_cast<float>(s.w) / static_cast<float>(ow);
  struct Tap {
    std::int64_t i0, step;
    float l0, l1;
  };
  auto taps = [](std::int64_t out, std::int64_t in, float scale) {
    std::vector<Tap> t(static_cast<std::size_t>(out));
    for (std::int64_t o = 0; o < out; ++o) {
      float src = scale * (static_cast<float>(o) + 0.5f) - 0.5f;
      if (src < 0.0f) src = 0.0f;
      const std::int64_t i0 = static_cast<std::int64_t>(src);
      const float l1 = src - static_cast<float>(i0);
      t[o] = {i0, i0 < in - 1 ? 1 : 0, 1.0f - l1, l1};
    }
    return t;
  };
  const std::vector<Tap> th = taps(oh, s.h, sh), tw = taps(ow, s.w, sw);
  const float* xp = x.data();
  float* yp = y.data();
  detail::parallel_for(s.n * s.c, [&](std::int64_t nc) {
    const float* src = xp + nc * s.h * s.w;
    float* dst = yp + nc * oh * ow;
    for (std::int64_t i = 0; i < oh; ++i) {
      const Tap& a = th[i];
      const float* r0 = src + a.i0 * s.w;
      const float* r1 = r0 + a.step * s.w;
      for (std::int64_t j = 0; j < ow; ++j) {
        const Tap& b = tw[j];
        dst[i * ow + j] = a.l0 * (b.l0 * r0[b.i0] + b.l1 * r0[b.i0 + b.step]) +
                          a.l1 * (b.l0 * r1[b.i0] + b.l1 * r1[b.i0 + b.step]);
      }
    }
  });
  return y;
}

// a . b with eight partial sums (vectorisable).
float dot(const float* a, const float* b, std::int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void require(const Tensor& t, const Shape& shape, const char* name) {
  CVATTN_CHECK(t.defined(), ValueError, kWhere, ": the selected attention_type needs '", name, "'");
  check_shape(t, shape, name, kWhere);
}

}  // namespace

AttentionTerms parse_attention_type(std::string_view word) {
  AttentionTerms t{};
  bool ok = word.size() == 4;
  for (std::size_t i = 0; ok && i < 4; ++i) {
    ok = word[i] == '0' || word[i] == '1';
    if (ok) t[i] = word[i] == '1';
  }
  CVATTN_CHECK(ok, ValueError,
               "attention_type must be four characters 0 or 1 (e.g. '1111', "
               "'0010'), got '",
               std::string(word), "'");
  return t;
}

Tensor generalized_position_embedding(std::int64_t q_len, std::int64_t kv_len,
                                      std::int64_t q_stride, std::int64_t kv_stride,
                                      std::int64_t magnitude, std::int64_t feat_dim) {
  const char* where = "generalized_position_embedding";
  CVATTN_CHECK(q_len >= 1 && kv_len >= 1 && q_stride >= 1 && kv_stride >= 1, ValueError, where,
               ": lengths and strides must be >= 1");
  CVATTN_CHECK(feat_dim >= 4 && feat_dim % 4 == 0, ValueError, where,
               ": feat_dim must be a positive multiple of 4, got ", feat_dim);
  const std::int64_t quarter = feat_dim / 4;
  std::vector<float> dim_mat(static_cast<std::size_t>(quarter));
  const float step = static_cast<float>(4.0 / static_cast<double>(feat_dim));
  for (std::int64_t k = 0; k < quarter; ++k) {
    dim_mat[k] = std::pow(1000.0f, step * static_cast<float>(k));
  }
  Tensor emb = Tensor::empty({q_len, kv_len, 2 * quarter});
  float* e = emb.data();
  for (std::int64_t i = 0; i < q_len; ++i) {
    for (std::int64_t j = 0; j < kv_len; ++j) {
      const float d = (static_cast<float>(i * q_stride) - static_cast<float>(j * kv_stride)) *
                      static_cast<float>(magnitude);
      float* row = e + (i * kv_len + j) * 2 * quarter;
      for (std::int64_t k = 0; k < quarter; ++k) {
        const float a = d / dim_mat[k];
        row[k] = std::sin(a);
        row[quarter + k] = std::cos(a);
      }
    }
  }
  return emb;
}

AttentionResult generalized_attention(const Tensor& x, const GeneralizedAttentionWeights& w,
                                      const GeneralizedAttentionOptions& o) {
  const Tensor::Nchw s = x.nchw("x");
  const std::int64_t heads = o.num_heads();
  CVATTN_CHECK(heads >= 1 && heads <= s.c, ValueError, kWhere, ": num_heads must be in [1, ", s.c,
               "] (the input channels), got ", heads);
  CVATTN_CHECK(o.kv_stride() >= 1 && o.q_stride() >= 1, ValueError, kWhere,
               ": kv_stride and q_stride must be >= 1, got ", o.kv_stride(), " and ", o.q_stride());
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, kWhere, ": tensor 'x' expected H, W >= 1, got ",
               to_string(x.shape()));
  const AttentionTerms t = o.attention_type();
  const std::int64_t e = s.c / heads, hc = heads * e;
  const Tensor xq = subsample(x, o.q_stride());
  const Tensor xkv = subsample(x, o.kv_stride());
  const std::int64_t hq = xq.dim(2), wq = xq.dim(3), hk = xkv.dim(2), wk = xkv.dim(3);
  const std::int64_t sk = hk * wk;
  const bool saliency = t[2] && !t[0] && !t[1] && !t[3];
  const bool wrong_branch = t[1] && !t[3];  // mmcv's '0100' code path
  if (wrong_branch) {
    CVATTN_CHECK(hq == wq, ShapeError, kWhere,
                 ": attention_type with term 1 ('query content - "
                 "position') but not term 3 runs mmcv's '0100' branch, which is only defined on "
                 "square query maps (mmdetection#8179); got ",
                 hq, " x ", wq, " queries from tensor 'x' ", to_string(x.shape()));
  }
  if (o.spatial_range() >= 0 && o.max_len() > 0) {
    const std::int64_t max_len_kv = static_cast<std::int64_t>(
        (static_cast<double>(o.max_len()) - 1.0) / static_cast<double>(o.kv_stride()) + 1.0);
    CVATTN_CHECK(hq <= o.max_len() && wq <= o.max_len() && hk <= max_len_kv && wk <= max_len_kv,
                 ShapeError, kWhere, ": spatial_range's constraint map covers ", o.max_len(), " x ",
                 o.max_len(), " queries and ", max_len_kv, " x ", max_len_kv, " keys, got ", hq,
                 " x ", wq, " and ", hk, " x ", wk);
  }
  const Shape proj{hc, s.c, 1, 1};
  if (t[0] || t[1]) require(w.query_weight, proj, "query_conv.weight");
  if (t[0] || t[2]) require(w.key_weight, proj, "key_conv.weight");
  require(w.value_weight, proj, "value_conv.weight");
  if (t[2]) require(w.appr_bias, {hc}, "appr_bias");
  if (t[3]) require(w.geom_bias, {hc}, "geom_bias");
  std::int64_t pdim = 0;
  if (t[1] || t[3]) {
    require(w.fc_x, {hc, kAny}, "appr_geom_fc_x.weight");
    require(w.fc_y, w.fc_x.shape(), "appr_geom_fc_y.weight");
    pdim = 2 * w.fc_x.dim(1);
    CVATTN_CHECK(pdim % 4 == 0, ValueError, kWhere, ": 'appr_geom_fc_x.weight' ",
                 to_string(w.fc_x.shape()),
                 " needs an even input width (position_embedding_dim a multiple of 4)");
  }
  require(w.proj_weight, {s.c, hc, 1, 1}, "proj_conv.weight");
  if (w.proj_bias.defined()) check_shape(w.proj_bias, {s.c}, "proj_conv.bias", kWhere);
  require(w.gamma, {1}, "gamma");

  const std::int64_t lq = saliency ? 1 : hq * wq;
  const Tensor q = (t[0] || t[1]) ? linear(flatten_spatial(xq), w.query_weight.reshape({hc, s.c}))
                                  : Tensor();  // [N, hq*wq, heads*E]
  // Keys and values channel-major, [N, heads*E, S]: one GEMM per sample on the NCHW map.
  auto project_kv = [&](const Tensor& weight) {
    Tensor out = Tensor::empty({s.n, hc, sk});
    const float* wp = weight.data();
    const float* xp = xkv.data();
    float* op = out.data();
    detail::parallel_for(s.n, [&](std::int64_t n) {
      detail::attn::product(detail::attn::mmap(op + n * hc * sk, hc, sk),
                            detail::attn::cmap(wp, hc, s.c),
                            detail::attn::cmap(xp + n * s.c * sk, s.c, sk));
    });
    return out;
  };
  const Tensor k = (t[0] || t[2]) ? project_kv(w.key_weight) : Tensor();
  const Tensor v = project_kv(w.value_weight);
  Tensor px, py;  // [wq, wk, heads*E], [hq, hk, heads*E], divided by sqrt(2)
  if (t[1] || t[3]) {
    const float r2 = static_cast<float>(std::sqrt(2.0));
    px = linear(generalized_position_embedding(wq, wk, o.q_stride(), o.kv_stride(),
                                               o.position_magnitude(), pdim),
                w.fc_x);
    py = linear(generalized_position_embedding(hq, hk, o.q_stride(), o.kv_stride(),
                                               o.position_magnitude(), pdim),
                w.fc_y);
    for (std::int64_t i = 0; i < px.numel(); ++i) px[i] /= r2;
    for (std::int64_t i = 0; i < py.numel(); ++i) py[i] /= r2;
  }

  Tensor energy = Tensor::empty({s.n, heads, lq, sk});
  const float* qp = q.defined() ? q.data() : nullptr;
  const float* kp = k.defined() ? k.data() : nullptr;
  const float* ab = t[2] ? w.appr_bias.data() : nullptr;
  const float* gb = t[3] ? w.geom_bias.data() : nullptr;
  const float* pxp = px.defined() ? px.data() : nullptr;
  const float* pyp = py.defined() ? py.data() : nullptr;
  float* ep = energy.data();
  const std::int64_t r = o.spatial_range(), kvs = o.kv_stride();
  const float ninf = -std::numeric_limits<float>::infinity();
  // Content terms (0, 2) as one GEMM per (sample, head): rows q_i + appr_bias, q_i, or
  // appr_bias alone, times the keys.
  const bool content = t[0] || t[2];
  Tensor qc = content && !(t[0] && !t[2]) ? Tensor::empty({s.n * heads, lq, e}) : Tensor();
  float* qcp = qc.defined() ? qc.data() : nullptr;
  detail::parallel_for(s.n * heads, [&](std::int64_t nh) {
    using detail::attn::cmap;
    using detail::attn::mmap;
    float* eb = ep + nh * lq * sk;
    if (!content) {
      for (std::int64_t i = 0; i < lq * sk; ++i) eb[i] = 0.0f;
      return;
    }
    const std::int64_t n = nh / heads, head = nh % heads;
    const auto kh = cmap(kp + (n * hc + head * e) * sk, e, sk);
    if (t[0] && !t[2]) {
      detail::attn::product(mmap(eb, lq, sk), cmap(qp + n * lq * hc + head * e, lq, e, hc), kh);
      return;
    }
    float* qrow = qcp + nh * lq * e;
    for (std::int64_t i = 0; i < lq; ++i) {
      const float* qi = t[0] ? qp + (n * lq + i) * hc + head * e : nullptr;
      for (std::int64_t c = 0; c < e; ++c) {
        qrow[i * e + c] = t[0] ? qi[c] + ab[head * e + c] : ab[head * e + c];
      }
    }
    detail::attn::product(mmap(eb, lq, sk), cmap(qrow, lq, e), kh);
  });
  // Position terms (1, 3) and the spatial range, row by row.
  // Per-thread scratch, allocated before the parallel region (which must not throw).
  const std::int64_t rows = s.n * heads * lq, width = e + wk + hk;
  const std::int64_t threads =
      std::max<std::int64_t>(1, std::min<std::int64_t>(detail::max_threads(), rows));
  Tensor scratch = Tensor::empty({threads, width});
  detail::parallel_for(threads, [&](std::int64_t th) {
    float* gq = scratch.data() + th * width;
    float* ex = gq + e;
    float* ey = ex + wk;
    for (std::int64_t row = rows * th / threads; row < rows * (th + 1) / threads; ++row) {
      const std::int64_t i = row % lq, head = (row / lq) % heads, n = row / (lq * heads);
      const std::int64_t yi = i / wq, xi = i % wq;
      float* er = ep + row * sk;
      if (t[1] || t[3]) {
        const float* qi = qp != nullptr ? qp + (n * lq + i) * hc + head * e : nullptr;
        const float* qx = nullptr;  // the query multiplying the horizontal embeddings
        const float* qy = nullptr;  // ... and the vertical ones
        if (t[1] && t[3]) {
          for (std::int64_t c = 0; c < e; ++c) gq[c] = qi[c] + gb[head * e + c];
          qx = qy = gq;
        } else if (t[1]) {
          qx = qi;
          // mmcv's '0100' branch: the query at (h = xi, w = yi) meets row yi's embeddings.
          qy = qp + (n * lq + xi * wq + yi) * hc + head * e;
        } else {
          qx = qy = gb + head * e;
        }
        for (std::int64_t jx = 0; jx < wk; ++jx) {
          ex[jx] = dot(qx, pxp + (xi * wk + jx) * hc + head * e, e);
        }
        for (std::int64_t jy = 0; jy < hk; ++jy) {
          ey[jy] = dot(qy, pyp + (yi * hk + jy) * hc + head * e, e);
        }
        for (std::int64_t jy = 0; jy < hk; ++jy) {
          for (std::int64_t jx = 0; jx < wk; ++jx) er[jy * wk + jx] += ex[jx] + ey[jy];
        }
      }
      if (r >= 0) {
        const std::int64_t y0 = std::max<std::int64_t>(floor_div(yi - r, kvs), 0);
        const std::int64_t y1 = floor_div(yi + r + 1, kvs) + 1;
        const std::int64_t x0 = std::max<std::int64_t>(floor_div(xi - r, kvs), 0);
        const std::int64_t x1 = floor_div(xi + r + 1, kvs) + 1;
        for (std::int64_t jy = 0; jy < hk; ++jy) {
          for (std::int64_t jx = 0; jx < wk; ++jx) {
            if (jy < y0 || jy >= y1 || jx < x0 || jx >= x1) er[jy * wk + jx] = ninf;
          }
        }
      }
    }
  });
  // Softmax over the keys, in place.
  detail::parallel_for(s.n * heads * lq, [&](std::int64_t row) {
    detail::softmax_row(ep + row * sk, sk, 1.0f, nullptr, 0, sk);
  });
  const Tensor& attn = energy;

  // ctx[n, head*E + c, i] = sum_j attn[n, head, i, j] v[n, head*E + c, j], channel-major, then
  // proj_conv as one GEMM per sample: out [C, Lq] = W [C, heads*E] ctx + bias.
  Tensor ctx = Tensor::empty({s.n, hc, lq});
  Tensor out = Tensor::empty({s.n, s.c, saliency ? 1 : hq, saliency ? 1 : wq});
  const float* ap = attn.data();
  const float* vp = v.data();
  const float* pw = w.proj_weight.data();
  const float* pb = w.proj_bias.defined() ? w.proj_bias.data() : nullptr;
  float* cp = ctx.data();
  float* outp = out.data();
  detail::parallel_for(s.n * heads, [&](std::int64_t nh) {
    using detail::attn::cmap;
    using detail::attn::mmap;
    const std::int64_t n = nh / heads, head = nh % heads;
    detail::attn::product(mmap(cp + (n * hc + head * e) * lq, e, lq),
                          cmap(vp + (n * hc + head * e) * sk, e, sk),
                          cmap(ap + nh * lq * sk, lq, sk), false, true);
  });
  detail::parallel_for(s.n, [&](std::int64_t n) {
    using detail::attn::cmap;
    using detail::attn::mmap;
    auto om = mmap(outp + n * s.c * lq, s.c, lq);
    detail::attn::product(om, cmap(pw, s.c, hc), cmap(cp + n * hc * lq, hc, lq));
    if (pb != nullptr) {
      for (std::int64_t c = 0; c < s.c; ++c) om.row(c).array() += pb[c];
    }
  });
  if (o.q_stride() > 1 && !saliency) out = upsample_bilinear(out, s.h, s.w);

  Tensor y = Tensor::empty(x.shape());
  const float g = w.gamma[0];
  const float* op = out.data();
  const float* xp = x.data();
  float* yp = y.data();
  const std::int64_t plane = s.h * s.w;
  detail::parallel_for(s.n * s.c, [&](std::int64_t nc) {
    const float* xr = xp + nc * plane;
    float* yr = yp + nc * plane;
    if (saliency) {
      const float add = g * op[nc];
      for (std::int64_t i = 0; i < plane; ++i) yr[i] = add + xr[i];
    } else {
      const float* orow = op + nc * plane;
      for (std::int64_t i = 0; i < plane; ++i) yr[i] = g * orow[i] + xr[i];
    }
  });
  AttentionResult result{y, {}};
  if (o.need_weights()) result.attn_weights = attn;
  return result;
}

}  // namespace cvattn::functional

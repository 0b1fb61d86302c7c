#include "cvattn/functional/bilinear_attention.hpp"

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"

namespace cvattn::functional {

Tensor bilinear_attn_transform(const Tensor& x, const Tensor& p, const Tensor& q) {
  const char* where = "bilinear_attn_transform";
  const Tensor::Nchw s = x.nchw("x");
  const Tensor::Nchw sp = p.nchw("p");
  check_shape(q, p.shape(), "q", where);
  const std::int64_t g = sp.c, b = sp.h;
  CVATTN_CHECK(sp.n == s.n && sp.w == b && b >= 1 && g >= 1 && s.c % g == 0, ShapeError, where,
               ": p ", to_string(p.shape()), " must be [N, G, b, b] with G dividing the ", s.c,
               " channels of x ", to_string(x.shape()));
  CVATTN_CHECK(s.h >= b && s.w >= b && s.h % b == 0 && s.w % b == 0, ShapeError, where, ": x ",
               to_string(x.shape()), " must have H and W multiples of the block ", b);
  const std::int64_t th = s.h / b, tw = s.w / b, cpg = s.c / g, plane = s.h * s.w;
  Tensor tmp = Tensor::empty(x.shape());
  Tensor y = Tensor::empty(x.shape());
  const float* xp = x.data();
  const float* pp = p.data();
  const float* qp = q.data();
  float* tp = tmp.data();
  float* yp = y.data();
  detail::parallel_for(s.n * s.c, [&](std::int64_t nc) {
    const std::int64_t n = nc / s.c, grp = (nc % s.c) / cpg;
    const float* pm = pp + (n * g + grp) * b * b;
    const float* qm = qp + (n * g + grp) * b * b;
    const float* src = xp + nc * plane;
    float* t = tp + nc * plane;
    float* dst = yp + nc * plane;
    // t = P x: row i*th + a mixes rows i'*th + a.
    for (std::int64_t i = 0; i < b; ++i) {
      for (std::int64_t a = 0; a < th; ++a) {
        float* trow = t + (i * th + a) * s.w;
        for (std::int64_t col = 0; col < s.w; ++col) trow[col] = 0.0f;
        for (std::int64_t ii = 0; ii < b; ++ii) {
          const float coef = pm[i * b + ii];
          const float* xrow = src + (ii * th + a) * s.w;
          for (std::int64_t col = 0; col < s.w; ++col) trow[col] += coef * xrow[col];
        }
      }
    }
    // y = t Q: column j*tw + e mixes columns j'*tw + e.
    for (std::int64_t row = 0; row < s.h; ++row) {
      const float* trow = t + row * s.w;
      float* yrow = dst + row * s.w;
      for (std::int64_t j = 0; j < b; ++j) {
        for (std::int64_t e = 0; e < tw; ++e) {
          float acc = 0.0f;
          for (std::int64_t jj = 0; jj < b; ++jj) acc += trow[jj * tw + e] * qm[jj * b + j];
          yrow[j * tw + e] = acc;
        }
      }
    }
  });
  return y;
}

}  // namespace cvattn::functional

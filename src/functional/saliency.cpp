#include "cvattn/functional/saliency.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"

namespace cvattn::functional {

Tensor class_activation_map(const Tensor& feature_map, const Tensor& weight, const Tensor& logits,
                            std::int64_t class_index) {
  const char* where = "class_activation_map";
  check_defined(feature_map, "feature_map", where);
  check_defined(weight, "weight", where);
  check_defined(logits, "logits", where);
  const Tensor::Nchw s = feature_map.nchw("feature_map");
  check_shape(weight, {kAny, s.c}, "weight", where);
  const std::int64_t classes = weight.dim(0);
  check_shape(logits, {s.n, classes}, "logits", where);
  CVATTN_CHECK(class_index < classes, ValueError, where, ": class_index ", class_index,
               " out of range for ", classes, " classes");
  const std::int64_t hw = s.h * s.w;
  Tensor cam = Tensor::zeros({s.n, s.h, s.w});
  if (cam.numel() == 0 || classes == 0) return cam;

  std::vector<std::int64_t> chosen(static_cast<std::size_t>(s.n));
  for (std::int64_t n = 0; n < s.n; ++n) {
    std::int64_t best = 0;
    const float* row = logits.data() + n * classes;
    for (std::int64_t k = 1; k < classes; ++k) {
      if (row[k] > row[best]) best = k;  // first maximum, as torch.argmax
    }
    chosen[static_cast<std::size_t>(n)] = class_index >= 0 ? class_index : best;
  }
  const float* f = feature_map.data();
  const float* w = weight.data();
  float* out = cam.data();
  // Sums in double (PyTorch's einsum blocks its float sums; either is well within tolerance).
  std::vector<double> sums(static_cast<std::size_t>(s.n * hw), 0.0);
  cvattn::detail::parallel_for(s.n, [&](std::int64_t n) {
    const float* wc = w + chosen[static_cast<std::size_t>(n)] * s.c;
    float* dst = out + n * hw;
    double* acc = sums.data() + n * hw;
    for (std::int64_t k = 0; k < s.c; ++k) {
      const double wk = wc[k];
      const float* plane = f + (n * s.c + k) * hw;
      for (std::int64_t i = 0; i < hw; ++i) acc[i] += wk * plane[i];
    }
    double peak = 0.0;
    for (std::int64_t i = 0; i < hw; ++i) {
      double& v = acc[i];
      v = v > 0.0 ? v : 0.0;
      peak = v > peak ? v : peak;
    }
    for (std::int64_t i = 0; i < hw; ++i) {
      const double v = acc[i];
      dst[i] = static_cast<float>(peak > 0.0 ? v / peak : v);
    }
  });
  return cam;
}

}  // namespace cvattn::functional

namespace cvattn::functional {

HeadFusion parse_head_fusion(const std::string& word) {
  if (word == "mean") return HeadFusion::mean;
  if (word == "max") return HeadFusion::max;
  if (word == "min") return HeadFusion::min;
  throw ValueError("head_fusion: expected mean, max or min, got '" + word + "'");
}

const char* to_string(HeadFusion fusion) {
  switch (fusion) {
    case HeadFusion::max:
      return "max";
    case HeadFusion::min:
      return "min";
    case HeadFusion::mean:
      break;
  }
  return "mean";
}

Tensor attention_rollout(const std::vector<Tensor>& attentions,
                         const AttentionRolloutOptions& options) {
  const char* where = "attention_rollout";
  CVATTN_CHECK(!attentions.empty(), ValueError, where, ": no attention maps given");
  const Tensor& first = attentions.front();
  check_defined(first, "attentions[0]", where);
  CVATTN_CHECK(first.rank() == 4 && first.dim(2) == first.dim(3) && first.dim(1) >= 1, ShapeError,
               where, ": tensor 'attentions[0]' expected [N, heads, T, T], got ",
               cvattn::to_string(first.shape()));
  const std::int64_t n = first.dim(0), t = first.dim(2);
  for (std::size_t l = 0; l < attentions.size(); ++l) {
    const Tensor& a = attentions[l];
    const std::string name = "attentions[" + std::to_string(l) + "]";
    check_defined(a, name.c_str(), where);
    check_shape(a, {n, kAny, t, t}, name.c_str(), where);
    CVATTN_CHECK(a.dim(1) >= 1, ShapeError, where, ": tensor '", name, "' has no heads");
  }
  const Pair2 grid = options.grid();
  const std::int64_t prefix = options.prefix_tokens();
  CVATTN_CHECK(prefix >= 0 && grid.h >= 1 && grid.w >= 1 && prefix + grid.h * grid.w == t,
               ShapeError, where, ": ", t, " tokens do not split into ", prefix,
               " prefix tokens and a ", grid.h, "x", grid.w, " patch grid");
  const double ratio = options.discard_ratio();
  CVATTN_CHECK(ratio >= 0.0 && ratio < 1.0, ValueError, where,
               ": discard_ratio must be in [0, 1), got ", ratio);
  const std::int64_t tt = t * t;
  const auto discard = static_cast<std::int64_t>(
      std::floor(ratio * static_cast<double>(t) * static_cast<double>(t)));
  const HeadFusion fusion = options.head_fusion();

  Tensor out = Tensor::empty({n, grid.h, grid.w});
  // Only row 0 of R = Â_L ... Â_1 is needed: r = e_0^T Â_L ... Â_1, a vector-matrix product
  // per block taken from the last block back (T^2 per block instead of T^3).
  // Scratch per sample, allocated before the parallel region: A, r, r's next value, the order.
  std::vector<double> scratch(static_cast<std::size_t>(n * (tt + 2 * t)));
  std::vector<std::int64_t> order(static_cast<std::size_t>(discard > 0 ? n * tt : 0));
  cvattn::detail::parallel_for(n, [&](std::int64_t s) {
    double* a = scratch.data() + s * (tt + 2 * t);
    double* r = a + tt;
    double* p = r + t;
    for (std::int64_t j = 0; j < t; ++j) r[j] = j == 0 ? 1.0 : 0.0;
    for (auto it = attentions.rbegin(); it != attentions.rend(); ++it) {
      const Tensor& att = *it;
      const std::int64_t heads = att.dim(1);
      const float* src = att.data() + s * heads * tt;
      for (std::int64_t i = 0; i < tt; ++i) {
        double v = src[i];
        for (std::int64_t h = 1; h < heads; ++h) {
          const double w = src[h * tt + i];
          if (fusion == HeadFusion::mean) v += w;
          if (fusion == HeadFusion::max) v = w > v ? w : v;
          if (fusion == HeadFusion::min) v = w < v ? w : v;
        }
        a[i] = fusion == HeadFusion::mean ? v / static_cast<double>(heads) : v;
      }
      if (discard > 0) {
        std::int64_t* idx = order.data() + s * tt;
        for (std::int64_t i = 0; i < tt; ++i) idx[i] = i;
        std::nth_element(idx, idx + (discard - 1), idx + tt, [&](std::int64_t x, std::int64_t y) {
          return a[x] < a[y] || (a[x] == a[y] && x < y);
        });
        for (std::int64_t k = 0; k < discard; ++k) {
          if (idx[k] != 0) a[idx[k]] = 0.0;
        }
      }
      for (std::int64_t i = 0; i < t; ++i) {  // Â = 0.5 A + 0.5 I, rows normalised
        double* row = a + i * t;
        double sum = 0.0;
        for (std::int64_t j = 0; j < t; ++j) {
          row[j] = 0.5 * row[j] + (i == j ? 0.5 : 0.0);
          sum += row[j];
        }
        for (std::int64_t j = 0; j < t; ++j) row[j] /= sum;
      }
      using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
      using Row = Eigen::Matrix<double, 1, Eigen::Dynamic>;
      Eigen::Map<Row>(p, t).noalias() =
          Eigen::Map<const Row>(r, t) * Eigen::Map<const Mat>(a, t, t);  // r <- r Â_l
      std::swap(r, p);
    }
    double peak = 0.0;
    for (std::int64_t j = prefix; j < t; ++j) peak = r[j] > peak ? r[j] : peak;
    float* dst = out.data() + s * grid.h * grid.w;
    for (std::int64_t j = prefix; j < t; ++j) {
      dst[j - prefix] = static_cast<float>(peak > 0.0 ? r[j] / peak : r[j]);
    }
  });
  return out;
}

}  // namespace cvattn::functional

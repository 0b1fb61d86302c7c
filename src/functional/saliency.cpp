#include "cvattn/functional/saliency.hpp"

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

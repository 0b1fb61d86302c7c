#pragma once
// Inference BatchNorm of one channel as PyTorch's CPU kernel folds it, in float32:
//   alpha = (1 / sqrt(var + eps)) * weight,  beta = bias - mean * alpha,  y = x * alpha + beta.
// The one definition behind functional/batch_norm (batch_norm, fold_batch_norm) and the norms
// inside the attention functions. Private to cvattn.
#include <cmath>

namespace cvattn::detail {

struct BnAffine {
  float alpha;
  float beta;
};

[[nodiscard]] inline BnAffine bn_affine(float weight, float bias, float mean, float var,
                                        float eps) {
  const float invstd = 1.0f / std::sqrt(var + eps);
  const float alpha = invstd * weight;
  return {alpha, bias - mean * alpha};
}

}  // namespace cvattn::detail

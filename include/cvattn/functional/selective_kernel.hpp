#pragma once
// The attention of a selective-kernel block (timm SelectiveKernel's SelectiveKernelAttn and the
// weighted sum of its paths) as a stateless function; the module (SelectiveKernel) runs the
// path convs with conv2d and owns the weights.
#include <vector>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn::functional {

struct SelectiveKernelFused {
  Tensor output;     // [N, C, H, W]
  Tensor attention;  // [N, P, C], the softmax over the paths
};

// paths: P >= 1 path features f_p [N, C, H, W] before their ReLU (conv + folded BatchNorm).
//   u = sum_p relu(f_p); s = mean_hw u                          [N, C]
//   z = relu(reduce_weight s + reduce_bias)                     [N, A]  (attn.bn folded in)
//   a = softmax over p of (select_weight z) viewed [N, P, C]
//   y = sum_p a[:, p, :] * relu(f_p)
// reduce_weight [A, C] (or [A, C, 1, 1]), reduce_bias [A], select_weight [P*C, A] (or
// [P*C, A, 1, 1]). A NaN logit makes its whole softmax column NaN, as in PyTorch.
// overwrite_first_path: y is written into paths[0]'s storage (which the caller must own
// alone) instead of a new tensor.
[[nodiscard]] CVATTN_EXPORT SelectiveKernelFused selective_kernel_attention(
    const std::vector<Tensor>& paths, const Tensor& reduce_weight, const Tensor& reduce_bias,
    const Tensor& select_weight, bool overwrite_first_path = false);

}  // namespace cvattn::functional

// selective_kernel_attention (cvattn/functional/selective_kernel.hpp); the path reduction and
// the weighted sum of the paths are dispatched at run time (selective_kernel-inl.h), their
// reference twins are in functional/reference/selective_kernel.hpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "functional/selective_kernel-inl.h"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "functional/selective_kernel-inl.h"

#if HWY_ONCE
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/dispatch.hpp"
#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/functional/selective_kernel.hpp"
#include "functional/detail/selective_kernel.hpp"

namespace cvattn {
namespace detail {

HWY_EXPORT(ReluPathSum);
HWY_EXPORT(SelectPaths);

double relu_path_sum(const float* const* f, std::int64_t offset, std::int64_t paths,
                     std::int64_t hw) {
  return CVATTN_DISPATCH(ReluPathSum)(f, offset, paths, hw);
}

void select_paths(const float* const* f, std::int64_t offset, const float* w, std::int64_t w_stride,
                  std::int64_t paths, std::int64_t hw, float* y) {
  CVATTN_DISPATCH(SelectPaths)(f, offset, w, w_stride, paths, hw, y);
}

}  // namespace detail

namespace functional {
namespace {

// ReLU that keeps NaN, as torch.relu does.
inline float relu(float v) { return v <= 0.0f ? 0.0f : v; }

// [rows, cols] or [rows, cols, 1, 1].
void check_matrix(const Tensor& t, std::int64_t rows, std::int64_t cols, const char* name,
                  const char* where) {
  check_defined(t, name, where);
  if (t.rank() == 4) {
    check_shape(t, {rows, cols, 1, 1}, name, where);
  } else {
    check_shape(t, {rows, cols}, name, where);
  }
}

}  // namespace

SelectiveKernelFused selective_kernel_attention(const std::vector<Tensor>& paths,
                                                const Tensor& reduce_weight,
                                                const Tensor& reduce_bias,
                                                const Tensor& select_weight,
                                                bool overwrite_first_path) {
  constexpr const char* kWhere = "selective_kernel_attention";
  const auto count = static_cast<std::int64_t>(paths.size());
  CVATTN_CHECK(count >= 1, ValueError, kWhere, ": needs at least one path");
  check_defined(paths[0], "paths[0]", kWhere);
  check_shape(paths[0], {kAny, kAny, kAny, kAny}, "paths[0]", kWhere);
  for (std::int64_t p = 1; p < count; ++p) {
    const std::string name = "paths[" + std::to_string(p) + "]";
    check_defined(paths[static_cast<std::size_t>(p)], name.c_str(), kWhere);
    check_shape(paths[static_cast<std::size_t>(p)], paths[0].shape(), name.c_str(), kWhere);
  }
  const Tensor::Nchw s = paths[0].nchw("paths[0]");
  CVATTN_CHECK(s.h >= 1 && s.w >= 1, ShapeError, kWhere,
               ": the paths expected H, W >= 1 (the attention averages over them), got ",
               to_string(paths[0].shape()));
  const std::int64_t channels = s.c;
  check_defined(reduce_weight, "reduce_weight", kWhere);
  const std::int64_t attn = reduce_weight.dim(0);
  check_matrix(reduce_weight, attn, channels, "reduce_weight", kWhere);
  check_shape(reduce_bias, {attn}, "reduce_bias", kWhere);
  CVATTN_CHECK(channels <= std::numeric_limits<std::int64_t>::max() / count, ValueError, kWhere,
               ": ", count, " paths of ", channels, " channels are too many");
  check_matrix(select_weight, count * channels, attn, "select_weight", kWhere);

  const std::int64_t hw = s.h * s.w;
  const std::int64_t planes = s.n * channels;
  // Everything is allocated before the parallel regions, which must not throw.
  Tensor y = overwrite_first_path ? paths[0] : Tensor::empty(paths[0].shape());
  std::vector<double> pooled(static_cast<std::size_t>(planes));
  std::vector<float> hidden(static_cast<std::size_t>(attn));
  std::vector<float> logits(static_cast<std::size_t>(count * channels));
  Tensor attention = Tensor::empty({s.n, count, channels});
  std::vector<const float*> f_data(static_cast<std::size_t>(count));
  for (std::size_t p = 0; p < paths.size(); ++p) f_data[p] = paths[p].data();
  const float* const* fd = f_data.data();

  // s[n, c] = mean_hw sum_p relu(f_p): a read-only pass, ReLU applied on the fly.
  cvattn::detail::parallel_for(planes, [&](std::int64_t plane) {
    pooled[static_cast<std::size_t>(plane)] =
        cvattn::detail::relu_path_sum(fd, plane * hw, count, hw) / static_cast<double>(hw);
  });

  // The attention of each sample: a few thousand multiply-adds, serial.
  const float* wr = reduce_weight.data();  // [A, C]
  const float* br = reduce_bias.data();
  const float* wsel = select_weight.data();  // [P * C, A]
  for (std::int64_t n = 0; n < s.n; ++n) {
    const double* sn = pooled.data() + n * channels;
    for (std::int64_t a = 0; a < attn; ++a) {
      double acc = br[a];
      const float* row = wr + a * channels;
      for (std::int64_t c = 0; c < channels; ++c) acc += static_cast<double>(row[c]) * sn[c];
      hidden[static_cast<std::size_t>(a)] = relu(static_cast<float>(acc));
    }
    for (std::int64_t j = 0; j < count * channels; ++j) {
      double acc = 0.0;
      const float* row = wsel + j * attn;
      for (std::int64_t a = 0; a < attn; ++a) {
        acc += static_cast<double>(row[a]) * hidden[static_cast<std::size_t>(a)];
      }
      logits[static_cast<std::size_t>(j)] = static_cast<float>(acc);
    }
    float* wn = attention.data() + n * count * channels;
    for (std::int64_t c = 0; c < channels; ++c) {
      // softmax over p of logits[p * C + c]; a NaN logit makes the whole column NaN.
      float m = logits[static_cast<std::size_t>(c)];
      for (std::int64_t p = 1; p < count; ++p) {
        m = std::max(m, logits[static_cast<std::size_t>(p * channels + c)]);
      }
      float sum = 0.0f;
      for (std::int64_t p = 0; p < count; ++p) {
        const float e = std::exp(logits[static_cast<std::size_t>(p * channels + c)] - m);
        wn[p * channels + c] = e;
        sum += e;
      }
      for (std::int64_t p = 0; p < count; ++p) wn[p * channels + c] /= sum;
    }
  }

  // y = sum_p w_p * relu(f_p).
  float* yd = y.data();
  const float* att = attention.data();
  cvattn::detail::parallel_for(planes, [&](std::int64_t plane) {
    const std::int64_t n = plane / channels;
    const std::int64_t c = plane % channels;
    cvattn::detail::select_paths(fd, plane * hw, att + n * count * channels + c, channels, count,
                                 hw, yd + plane * hw);
  });
  return {y, attention};
}

}  // namespace functional
}  // namespace cvattn
#endif  // HWY_ONCE

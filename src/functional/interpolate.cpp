#include "cvattn/functional/interpolate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#include "cvattn/core/error.hpp"
#include "functional/detail/grain.hpp"
#include "functional/detail/interp_kernels.hpp"
#include "functional/detail/tasks.hpp"

namespace cvattn::functional {
namespace {

using Index = std::int64_t;

// The taps of one axis, one plane per tap: output index o reads input index index[j * out + o]
// with weight weight[j * out + o] for j < k. int32 indices, as the kernels' lanes hold them.
struct AxisTaps {
  int k = 1;
  std::vector<std::int32_t> index;
  std::vector<float> weight;
};

// PyTorch's area_pixel_compute_scale, in float: the step between source coordinates.
float axis_scale(Index in, Index out, bool align_corners, std::optional<double> scale) {
  if (align_corners) {
    return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  }
  if (scale && *scale > 0) return static_cast<float>(1.0 / *scale);
  return static_cast<float>(in) / static_cast<float>(out);
}

// PyTorch's area_pixel_compute_source_index.
float source_index(float scale, Index o, bool align_corners, bool cubic) {
  if (align_corners) return scale * static_cast<float>(o);
  const float src = scale * (static_cast<float>(o) + 0.5f) - 0.5f;
  return (!cubic && src < 0.0f) ? 0.0f : src;
}

// floor of the source coordinate, kept inside the input, and the fraction, clamped to [0, 1]
// (PyTorch's guard_index_and_lambda).
void guard(float real, Index in, Index& index, float& lambda) {
  index = std::min(static_cast<Index>(std::floor(real)), in - 1);
  lambda = std::min(std::max(real - static_cast<float>(index), 0.0f), 1.0f);
}

// Keys' cubic convolution weights for fraction t (A = -0.75), PyTorch's
// get_cubic_upsample_coefficients.
void cubic_weights(float t, float w[4]) {
  constexpr float A = -0.75f;
  auto near = [](float x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
  auto far = [](float x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
  w[0] = far(t + 1.0f);
  w[1] = near(t);
  w[2] = near(1.0f - t);
  w[3] = far(2.0f - t);
}

AxisTaps axis_taps(Index in, Index out, Interpolation mode, bool align_corners,
                   std::optional<double> scale) {
  AxisTaps taps;
  taps.k = mode == Interpolation::nearest ? 1 : mode == Interpolation::bilinear ? 2 : 4;
  taps.index.resize(static_cast<std::size_t>(out * taps.k));
  taps.weight.resize(static_cast<std::size_t>(out * taps.k));
  const float s = axis_scale(in, out, align_corners, scale);
  for (Index o = 0; o < out; ++o) {
    std::int32_t idx[4];
    float w[4];
    switch (mode) {
      case Interpolation::nearest: {
        Index src;
        if (out == in) {
          src = o;
        } else if (out == 2 * in) {
          src = o >> 1;
        } else {
          src = std::min(static_cast<Index>(std::floor(static_cast<float>(o) * s)), in - 1);
        }
        idx[0] = static_cast<std::int32_t>(src);
        w[0] = 1.0f;
        break;
      }
      case Interpolation::bilinear: {
        if (out == in && !align_corners) {
          idx[0] = idx[1] = static_cast<std::int32_t>(o);
          w[0] = 1.0f;
          w[1] = 0.0f;
          break;
        }
        Index i0;
        float lambda;
        guard(source_index(s, o, align_corners, false), in, i0, lambda);
        idx[0] = static_cast<std::int32_t>(i0);
        idx[1] = static_cast<std::int32_t>(i0 + (i0 < in - 1 ? 1 : 0));
        w[0] = 1.0f - lambda;
        w[1] = lambda;
        break;
      }
      case Interpolation::bicubic: {
        Index i0;
        float t;
        guard(source_index(s, o, align_corners, true), in, i0, t);
        cubic_weights(t, w);
        for (int j = 0; j < 4; ++j) {
          idx[j] = static_cast<std::int32_t>(std::min(std::max(i0 - 1 + j, Index{0}), in - 1));
        }
        break;
      }
    }
    for (int j = 0; j < taps.k; ++j) {
      taps.index[static_cast<std::size_t>(j * out + o)] = idx[j];
      taps.weight[static_cast<std::size_t>(j * out + o)] = w[j];
    }
  }
  return taps;
}

Index output_extent(Index in, double scale) {
  return static_cast<Index>(std::floor(static_cast<double>(in) * scale));
}

}  // namespace

Tensor interpolate(const Tensor& input, const InterpolateOptions& options) {
  constexpr const char* kWhere = "interpolate";
  check_defined(input, "input", kWhere);
  CVATTN_CHECK(input.rank() == 4, ShapeError, kWhere,
               ": tensor 'input' expected [N, C, H, W], got ", to_string(input.shape()));
  // Plain variables, not a structured binding: the lambdas below capture them (C++17).
  const Tensor::Nchw dims = input.nchw("input");
  const std::int64_t n = dims.n, c = dims.c, h = dims.h, w = dims.w;
  const Pair2 size = options.size();
  const Scale2 sf = options.scale_factor();
  const bool has_size = size.h != 0 || size.w != 0;
  const bool has_scale = sf.h != 0.0 || sf.w != 0.0;
  CVATTN_CHECK(!(has_size && has_scale), ValueError, kWhere,
               ": only one of size and scale_factor may be given");
  CVATTN_CHECK(has_size || has_scale, ValueError, kWhere,
               ": either size or scale_factor must be given");
  const Interpolation mode = options.mode();
  CVATTN_CHECK(!(options.align_corners() && mode == Interpolation::nearest), ValueError, kWhere,
               ": align_corners can only be set with the interpolating modes bilinear and "
               "bicubic, not nearest");
  Index oh = 0, ow = 0;
  std::optional<double> scale_h, scale_w;
  if (has_size) {
    CVATTN_CHECK(size.h > 0 && size.w > 0, ValueError, kWhere, ": size (", size.h, ", ", size.w,
                 ") must be positive");
    oh = size.h;
    ow = size.w;
  } else {
    CVATTN_CHECK(std::isfinite(sf.h) && std::isfinite(sf.w) && sf.h > 0 && sf.w > 0, ValueError,
                 kWhere, ": scale_factor (", sf.h, ", ", sf.w, ") must be positive and finite");
    CVATTN_CHECK(static_cast<double>(h) * sf.h < 2147483647.0 &&
                     static_cast<double>(w) * sf.w < 2147483647.0,
                 ValueError, kWhere, ": scale_factor (", sf.h, ", ", sf.w,
                 ") gives an output too large for 'input' ", to_string(input.shape()));
    oh = output_extent(h, sf.h);
    ow = output_extent(w, sf.w);
    if (!options.recompute_scale_factor()) {
      scale_h = sf.h;
      scale_w = sf.w;
    }
  }
  CVATTN_CHECK(h > 0 && w > 0 && oh > 0 && ow > 0, ValueError, kWhere,
               ": input and output sizes must be greater than 0, got input (", h, ", ", w,
               ") and output (", oh, ", ", ow, ")");
  checked_numel({n, c, oh, ow}, "interpolate output");
  Tensor y = Tensor::empty({n, c, oh, ow});
  const Index planes = n * c;
  if (planes == 0) return y;

  const AxisTaps ty = axis_taps(h, oh, mode, options.align_corners(), scale_h);
  const AxisTaps tx = axis_taps(w, ow, mode, options.align_corners(), scale_w);
  const float* src = input.data();
  float* dst = y.data();

  const detail::InterpAxis ax{tx.k, ow, tx.index.data(), tx.weight.data()};
  const detail::InterpAxis ay{ty.k, oh, ty.index.data(), ty.weight.data()};
  if (mode == Interpolation::nearest) {
    // Copies along both axes: no scratch rows.
    detail::parallel_ranges(planes, detail::items_per_task(oh * ow), [&](Index p0, Index p1) {
      detail::interp_planes(src + p0 * h * w, p1 - p0, h, w, ax, ay, nullptr, nullptr,
                            dst + p0 * oh * ow);
    });
    return y;
  }

  // Separable: every input row that a tap reads is first interpolated along W into scratch
  // (h rows of ow), then each output row blends k of those rows, contiguously.
  std::vector<unsigned char> used(static_cast<std::size_t>(h), 0);
  for (const auto r : ty.index) used[static_cast<std::size_t>(r)] = 1;
  // Planes per task: enough work to be worth a task (tiny inputs run serially).
  const Index per_task = detail::items_per_task(oh * ow * (tx.k + ty.k));
  const Index tasks = detail::ceil_div(planes, per_task);
  const Index slots = detail::slot_count(tasks);
  const Index stride = detail::slot_stride(h * ow);
  Tensor scratch = Tensor::empty({slots, stride});
  float* scratch_data = scratch.data();
  detail::for_each_task(tasks, slots, [&](Index task, Index slot) {
    const Index p0 = task * per_task, p1 = std::min(planes, p0 + per_task);
    detail::interp_planes(src + p0 * h * w, p1 - p0, h, w, ax, ay, used.data(),
                          scratch_data + slot * stride, dst + p0 * oh * ow);
  });
  return y;
}

}  // namespace cvattn::functional

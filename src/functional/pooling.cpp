#include "cvattn/functional/pooling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cvattn/core/error.hpp"
#include "functional/detail/pool_kernels.hpp"
#include "functional/detail/reduce.hpp"
#include "functional/detail/tasks.hpp"
#include "functional/detail/window.hpp"

namespace cvattn::functional {
namespace {

// NaN wins, as in PyTorch's `if (val > maxval || isnan(val))`; the non-short-circuit `|` keeps
// it branch-free so that loops over it vectorise.
inline float max_nan(float a, float b) { return ((b > a) | (b != b)) ? b : a; }

// [N, C, H, W] view of a rank-3 or rank-4 input.
struct Planes {
  std::int64_t n, c, h, w;
};

Planes planes_of(const Tensor& input, const char* where) {
  check_defined(input, "input", where);
  CVATTN_CHECK(input.rank() == 3 || input.rank() == 4, ShapeError, where,
               ": tensor 'input' expected [N, C, H, W] or [C, H, W], got ",
               to_string(input.shape()));
  const bool batched = input.rank() == 4;
  Planes p{batched ? input.dim(0) : 1, input.dim(-3), input.dim(-2), input.dim(-1)};
  CVATTN_CHECK(p.h > 0 && p.w > 0, ShapeError, where, ": tensor 'input' ", to_string(input.shape()),
               " has an empty spatial size");
  return p;
}

Tensor make_output(const Tensor& input, const Planes& p, std::int64_t ho, std::int64_t wo) {
  if (input.rank() == 3) return Tensor::empty({p.c, ho, wo});
  return Tensor::empty({p.n, p.c, ho, wo});
}

// PyTorch's pooling_output_shape for one axis.
std::int64_t pooled_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                         std::int64_t pad, std::int64_t dilation, bool ceil_mode) {
  const std::int64_t num =
      in + 2 * pad - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  // Floor division (the numerator may be negative).
  std::int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// A validated max/avg pooling call.
struct Window {
  Planes p;
  Pair2 kernel, stride, padding, dilation;
  std::int64_t ho, wo;
  // Length of the padded row buffer: the padded input and every window, even the last one of
  // ceil_mode that hangs past the padding.
  std::int64_t buffer;
};

Window validate_window(const Tensor& input, Pair2 kernel, Pair2 stride, Pair2 padding,
                       Pair2 dilation, bool ceil_mode, const char* where) {
  Window win{planes_of(input, where), kernel, stride, padding, dilation, 0, 0, 0};
  detail::check_pair(kernel, 1, "kernel_size", where);
  detail::check_pair(stride, 1, "stride", where);
  detail::check_pair(padding, 0, "padding", where);
  detail::check_pair(dilation, 1, "dilation", where);
  CVATTN_CHECK(padding.h <= kernel.h / 2 && padding.w <= kernel.w / 2, ValueError, where,
               ": padding (", padding.h, ", ", padding.w, ") must be at most half of kernel_size (",
               kernel.h, ", ", kernel.w, ")");
  const Planes& p = win.p;
  win.ho = pooled_size(p.h, kernel.h, stride.h, padding.h, dilation.h, ceil_mode);
  win.wo = pooled_size(p.w, kernel.w, stride.w, padding.w, dilation.w, ceil_mode);
  CVATTN_CHECK(win.ho >= 1 && win.wo >= 1, ShapeError, where, ": kernel_size (", kernel.h, ", ",
               kernel.w, ") with dilation (", dilation.h, ", ", dilation.w, ") and padding (",
               padding.h, ", ", padding.w, ") gives an empty output (", win.ho, ", ", win.wo,
               ") for 'input' ", to_string(input.shape()));
  win.buffer =
      std::max(p.w + 2 * padding.w, (win.wo - 1) * stride.w + (kernel.w - 1) * dilation.w + 1);
  return win;
}

Tensor run_max_pool(const Tensor& input, const Window& win) {
  const Planes& p = win.p;
  Tensor out = make_output(input, p, win.ho, win.wo);
  const std::int64_t planes = p.n * p.c;
  if (planes == 0) return out;
  const std::int64_t slots = detail::slot_count(planes);
  const std::int64_t stride = detail::slot_stride(win.buffer);
  Tensor scratch = Tensor::empty({slots, stride});
  const float* in = input.data();
  float* dst = out.data();
  float* scratch_data = scratch.data();
  const detail::PoolPlane g{p.h,           p.w,           win.ho,         win.wo,
                            win.kernel.h,  win.kernel.w,  win.stride.h,   win.stride.w,
                            win.padding.h, win.padding.w, win.dilation.h, win.dilation.w,
                            win.buffer};
  detail::for_each_task(planes, slots, [&](std::int64_t plane, std::int64_t slot) {
    detail::max_pool_plane(in + plane * p.h * p.w, g, scratch_data + slot * stride,
                           dst + plane * win.ho * win.wo);
  });
  return out;
}

// Number of input (or, with count_include_pad, padded) positions a window covers along one
// axis, PyTorch's avg_pool2d rule: the window is first clipped to the padded input, then
// (without count_include_pad) to the input.
std::int64_t window_count(std::int64_t start, std::int64_t kernel, std::int64_t in,
                          std::int64_t pad, bool include_pad) {
  std::int64_t end = std::min(start + kernel, in + pad);
  if (include_pad) return end - start;
  end = std::min(end, in);
  return end - std::max(start, std::int64_t{0});
}

}  // namespace

Tensor max_pool2d(const Tensor& input, const MaxPool2dOptions& options) {
  const Window win =
      validate_window(input, options.kernel_size(), options.stride(), options.padding(),
                      options.dilation(), options.ceil_mode(), "max_pool2d");
  return run_max_pool(input, win);
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dOptions& options) {
  constexpr const char* kWhere = "avg_pool2d";
  const Window win = validate_window(input, options.kernel_size(), options.stride(),
                                     options.padding(), Pair2(1), options.ceil_mode(), kWhere);
  const auto& divisor = options.divisor_override();
  CVATTN_CHECK(!divisor || *divisor != 0, ValueError, kWhere,
               ": divisor_override must be non-zero");
  const Planes& p = win.p;
  Tensor out = make_output(input, p, win.ho, win.wo);
  const std::int64_t planes = p.n * p.c;
  if (planes == 0) return out;
  // Per-axis window sizes; the divisor of (oy, ox) is their product.
  const bool include_pad = options.count_include_pad();
  std::vector<float> row_count(static_cast<std::size_t>(win.ho));
  std::vector<float> col_count(static_cast<std::size_t>(win.wo));
  for (std::int64_t oy = 0; oy < win.ho; ++oy) {
    row_count[static_cast<std::size_t>(oy)] = static_cast<float>(window_count(
        oy * win.stride.h - win.padding.h, win.kernel.h, p.h, win.padding.h, include_pad));
  }
  for (std::int64_t ox = 0; ox < win.wo; ++ox) {
    col_count[static_cast<std::size_t>(ox)] = static_cast<float>(window_count(
        ox * win.stride.w - win.padding.w, win.kernel.w, p.w, win.padding.w, include_pad));
  }
  const std::int64_t slots = detail::slot_count(planes);
  // Per slot: the padded row of column sums, then the divisors of one output row.
  const std::int64_t stride = detail::slot_stride(win.buffer + win.wo);
  Tensor scratch = Tensor::empty({slots, stride});
  const float* in = input.data();
  float* dst = out.data();
  float* scratch_data = scratch.data();
  const detail::PoolPlane g{p.h,
                            p.w,
                            win.ho,
                            win.wo,
                            win.kernel.h,
                            win.kernel.w,
                            win.stride.h,
                            win.stride.w,
                            win.padding.h,
                            win.padding.w,
                            1,
                            1,
                            win.buffer};
  const float div = divisor ? static_cast<float>(*divisor) : 0.0f;
  detail::for_each_task(planes, slots, [&](std::int64_t plane, std::int64_t slot) {
    detail::avg_pool_plane(in + plane * p.h * p.w, g, row_count.data(), col_count.data(), div,
                           scratch_data + slot * stride, dst + plane * win.ho * win.wo);
  });
  return out;
}

namespace {

// Adaptive windows along one axis: [floor(i*in/out), ceil((i+1)*in/out)).
std::vector<detail::ValidRange> adaptive_ranges(std::int64_t in, std::int64_t out) {
  std::vector<detail::ValidRange> r(static_cast<std::size_t>(out));
  for (std::int64_t i = 0; i < out; ++i) {
    r[static_cast<std::size_t>(i)] = {(i * in) / out, ((i + 1) * in + out - 1) / out};
  }
  return r;
}

// Mean (or NaN-propagating maximum, torch.amax) of n >= 1 contiguous floats: the plane
// reductions every global pool and channel gate shares (functional/detail/reduce.hpp).
template <bool kMax>
float reduce_plane(const float* x, std::int64_t n) {
  if constexpr (kMax) {
    return cvattn::detail::plane_mean_max(x, n).max;
  } else {
    return cvattn::detail::plane_mean(x, n);
  }
}

template <bool kMax>
Tensor adaptive_pool(const Tensor& input, Pair2 output_size, const char* where) {
  const Planes p = planes_of(input, where);
  CVATTN_CHECK(output_size.h >= 1 && output_size.w >= 1, ValueError, where,
               ": output_size must be positive, got (", output_size.h, ", ", output_size.w, ")");
  // Cells never exceed the input, so output_size beyond it only repeats pixels; bound it so
  // that i * in cannot overflow.
  CVATTN_CHECK(output_size.h <= detail::kMaxWindowValue && output_size.w <= detail::kMaxWindowValue,
               ValueError, where, ": output_size must be at most ", detail::kMaxWindowValue,
               ", got (", output_size.h, ", ", output_size.w, ")");
  const std::int64_t ho = output_size.h, wo = output_size.w;
  Tensor out = make_output(input, p, ho, wo);
  const std::int64_t planes = p.n * p.c;
  if (planes == 0) return out;
  if (ho == 1 && wo == 1) {  // global pooling: one reduction per contiguous plane
    const float* in = input.data();
    float* dst = out.data();
    const std::int64_t hw = p.h * p.w;
    cvattn::detail::parallel_for(
        planes, [&](std::int64_t plane) { dst[plane] = reduce_plane<kMax>(in + plane * hw, hw); });
    return out;
  }
  const auto rows = adaptive_ranges(p.h, ho);
  const auto cols = adaptive_ranges(p.w, wo);
  const std::int64_t slots = detail::slot_count(planes);
  const std::int64_t stride = detail::slot_stride(p.w);
  Tensor scratch = Tensor::empty({slots, stride});
  const float* in = input.data();
  float* dst = out.data();
  float* scratch_data = scratch.data();
  detail::for_each_task(planes, slots, [&](std::int64_t plane, std::int64_t slot) {
    float* acc = scratch_data + slot * stride;  // column sums (maxima) of one band of rows
    const float* src = in + plane * p.h * p.w;
    float* o = dst + plane * ho * wo;
    for (std::int64_t oy = 0; oy < ho; ++oy) {
      const auto r = rows[static_cast<std::size_t>(oy)];
      std::copy(src + r.lo * p.w, src + (r.lo + 1) * p.w, acc);
      detail::fold_rows(kMax, src, p.w, r.lo + 1, r.hi, acc);
      for (std::int64_t ox = 0; ox < wo; ++ox) {
        const auto c = cols[static_cast<std::size_t>(ox)];
        if constexpr (kMax) {
          float m = acc[c.lo];
          for (std::int64_t x = c.lo + 1; x < c.hi; ++x) m = max_nan(m, acc[x]);
          o[oy * wo + ox] = m;
        } else {
          // Summed in double: a global pool adds thousands of column sums.
          double sum = 0.0;
          for (std::int64_t x = c.lo; x < c.hi; ++x) sum += acc[x];
          const double count = static_cast<double>((r.hi - r.lo) * (c.hi - c.lo));
          o[oy * wo + ox] = static_cast<float>(sum / count);
        }
      }
    }
  });
  return out;
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& input, Pair2 output_size) {
  return adaptive_pool<false>(input, output_size, "adaptive_avg_pool2d");
}

Tensor adaptive_max_pool2d(const Tensor& input, Pair2 output_size) {
  return adaptive_pool<true>(input, output_size, "adaptive_max_pool2d");
}

Tensor global_avg_pool2d(const Tensor& input) {
  return adaptive_pool<false>(input, Pair2(1), "global_avg_pool2d");
}

Tensor global_max_pool2d(const Tensor& input) {
  return adaptive_pool<true>(input, Pair2(1), "global_max_pool2d");
}

}  // namespace cvattn::functional

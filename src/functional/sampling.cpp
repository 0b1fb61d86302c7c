// Sampling grids (docs/modules.md §7): affine_grid and its backward with PyTorch's exact float32
// arithmetic, plus projective and thin-plate-spline grids on the same base points. grid_sample
// itself lives in grid_sample.cpp.
#include "cvattn/functional/sampling.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/affine_grid_kernel.hpp"

namespace cvattn::functional {
namespace {

// torch.linspace(-1, 1, n) on x86-64 CPU, bit for bit: the vectorised fill writes blocks of 16
// as two 8-lane aranges `base + k*step` (base from whichever end is nearer), the tail element by
// element; PyTorch's build contracts `start + step*i` into an FMA, the lane offsets are not.
std::vector<float> torch_linspace(std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  if (n == 1) {
    out[0] = -1.0f;
    return out;
  }
  const float step = 2.0f / static_cast<float>(n - 1);
  const std::int64_t halfway = n / 2;
  auto scalar = [&](std::int64_t i) {
    return i < halfway ? std::fma(step, static_cast<float>(i), -1.0f)
                       : std::fma(-step, static_cast<float>(n - 1 - i), 1.0f);
  };
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (const std::int64_t block : {i, i + 8}) {
      const float base = scalar(block);
      for (int k = 0; k < 8; ++k) {
        out[static_cast<std::size_t>(block + k)] = base + static_cast<float>(k) * step;
      }
    }
  }
  for (; i < n; ++i) out[static_cast<std::size_t>(i)] = scalar(i);
  return out;
}

// affine_grid's base coordinates along one axis (§7): [0] for a single pixel, the pixel-centre
// lattice linspace(-1, 1, n) * (n - 1) / n for align_corners=false.
std::vector<float> base_coords(std::int64_t n, bool align_corners) {
  if (n <= 1)
    return std::vector<float>(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)), 0.0f);
  std::vector<float> v = torch_linspace(n);
  if (!align_corners) {
    const auto scale = static_cast<float>(n - 1);
    const auto count = static_cast<float>(n);
    for (float& x : v) x = x * scale / count;
  }
  return v;
}

struct GridSize {
  std::int64_t n, h, w;
};

GridSize check_size(const Shape& size, const char* where) {
  CVATTN_CHECK(size.size() == 4, ShapeError, where, ": size expected 4 entries {N, C, H, W}, got ",
               to_string(size));
  CVATTN_CHECK(size[0] >= 1 && size[1] >= 1 && size[2] >= 1 && size[3] >= 1, ValueError, where,
               ": size expected positive entries {N, C, H, W}, got ", to_string(size));
  (void)checked_numel({size[0], size[2], size[3], 2}, where);
  return {size[0], size[2], size[3]};
}

void check_batch(const Tensor& t, const Shape& expected, const char* name, const Shape& size,
                 const char* where) {
  check_defined(t, name, where);
  bool ok = t.rank() == static_cast<int>(expected.size());
  for (std::size_t i = 0; ok && i < expected.size(); ++i) {
    ok = expected[i] == kAny || expected[i] == t.shape()[i];
  }
  CVATTN_CHECK(ok, ShapeError, where, ": tensor '", name, "' expected ", to_string(expected),
               " (N of size ", to_string(size), "), got ", to_string(t.shape()));
}

double tps_kernel(double d2) { return d2 > 0.0 ? d2 * std::log(d2) : 0.0; }

// The grid's `rows` rows (row_floats each) in runs of about 32K floats spread over the threads,
// each run split where a plane of h rows ends (a new theta, or depth): fn(first row, count) for
// each piece, so that a kernel dispatch covers many rows (one per row cost 5-13 % of the grid).
template <class Fn>
void for_row_runs(std::int64_t rows, std::int64_t h, std::int64_t row_floats, Fn&& fn) {
  const std::int64_t per_task =
      std::max<std::int64_t>(1, (std::int64_t{1} << 15) / std::max<std::int64_t>(row_floats, 1));
  detail::parallel_for((rows + per_task - 1) / per_task, [&](std::int64_t task) {
    const std::int64_t end = std::min(rows, (task + 1) * per_task);
    for (std::int64_t row = task * per_task; row < end;) {
      const std::int64_t count = std::min(end - row, h - row % h);
      fn(row, count);
      row += count;
    }
  });
}

// --- onnx: 3-D affine_grid (size {N, C, D, H, W}, theta [N, 3, 4]) ---
struct GridSize3 {
  std::int64_t n, d, h, w;
};

GridSize3 check_size_3d(const Shape& size, const char* where) {
  CVATTN_CHECK(size.size() == 5 && size[0] >= 1 && size[1] >= 1 && size[2] >= 1 && size[3] >= 1 &&
                   size[4] >= 1,
               ValueError, where, ": size expected positive entries {N, C, D, H, W}, got ",
               to_string(size));
  (void)checked_numel({size[0], size[2], size[3], size[4], 3}, where);
  return {size[0], size[2], size[3], size[4]};
}

// PyTorch: base grid [N, D, H, W, 4] = (x_w, y_h, z_d, 1), times theta^T in a batched GEMM
// accumulating x*t0, then y*t1, z*t2 and 1*t3 fused in turn.
Tensor affine_grid_3d(const Tensor& theta, const Shape& size, bool align_corners) {
  const char* where = "affine_grid";
  const GridSize3 s = check_size_3d(size, where);
  check_batch(theta, {s.n, 3, 4}, "theta", size, where);
  const std::vector<float> xs = base_coords(s.w, align_corners);
  const std::vector<float> ys = base_coords(s.h, align_corners);
  const std::vector<float> zs = base_coords(s.d, align_corners);
  Tensor grid = Tensor::empty({s.n, s.d, s.h, s.w, 3});
  const float* th = theta.data();
  float* out = grid.data();
  for_row_runs(s.n * s.d * s.h, s.h, 3 * s.w, [&](std::int64_t row, std::int64_t count) {
    const std::int64_t plane = row / s.h;  // n * D + depth
    detail::affine_grid_rows_3d(xs.data(), ys.data() + row % s.h, count,
                                zs[static_cast<std::size_t>(plane % s.d)], th + (plane / s.d) * 12,
                                out + row * s.w * 3, s.w);
  });
  return grid;
}

// grad_theta[n] = sum_{d,h,w} grad_grid[n,d,h,w]^T (x_w, y_h, z_d, 1), accumulated in double.
Tensor affine_grid_3d_backward(const Tensor& grad_grid, const Shape& size, bool align_corners) {
  const char* where = "affine_grid_backward";
  const GridSize3 s = check_size_3d(size, where);
  check_batch(grad_grid, {s.n, s.d, s.h, s.w, 3}, "grad_grid", size, where);
  const std::vector<float> xs = base_coords(s.w, align_corners);
  const std::vector<float> ys = base_coords(s.h, align_corners);
  const std::vector<float> zs = base_coords(s.d, align_corners);
  Tensor grad_theta = Tensor::empty({s.n, 3, 4});
  const float* gg = grad_grid.data();
  float* gt = grad_theta.data();
  detail::parallel_for(s.n, [&](std::int64_t n) {
    double acc[3][4] = {};
    const float* g = gg + n * s.d * s.h * s.w * 3;
    for (std::int64_t d = 0; d < s.d; ++d) {
      const double z = zs[static_cast<std::size_t>(d)];
      for (std::int64_t h = 0; h < s.h; ++h) {
        const double y = ys[static_cast<std::size_t>(h)];
        for (std::int64_t w = 0; w < s.w; ++w, g += 3) {
          const double x = xs[static_cast<std::size_t>(w)];
          for (int k = 0; k < 3; ++k) {
            acc[k][0] += g[k] * x;
            acc[k][1] += g[k] * y;
            acc[k][2] += g[k] * z;
            acc[k][3] += g[k];
          }
        }
      }
    }
    for (int k = 0; k < 3; ++k) {
      for (int j = 0; j < 4; ++j) gt[n * 12 + k * 4 + j] = static_cast<float>(acc[k][j]);
    }
  });
  return grad_theta;
}
// --- end onnx ---

}  // namespace

Interpolation parse_interpolation(const std::string& word) {
  if (word == "bilinear") return Interpolation::bilinear;
  if (word == "nearest") return Interpolation::nearest;
  if (word == "bicubic") return Interpolation::bicubic;
  throw ValueError(
      detail::concat("parse_interpolation: mode expected one of bilinear, nearest, "
                     "bicubic, got '",
                     word, "'"));
}

PaddingMode parse_padding_mode(const std::string& word) {
  if (word == "zeros") return PaddingMode::zeros;
  if (word == "border") return PaddingMode::border;
  if (word == "reflection") return PaddingMode::reflection;
  throw ValueError(
      detail::concat("parse_padding_mode: padding_mode expected one of zeros, "
                     "border, reflection, got '",
                     word, "'"));
}

const char* interpolation_name(Interpolation mode) noexcept {
  switch (mode) {
    case Interpolation::bilinear:
      return "bilinear";
    case Interpolation::nearest:
      return "nearest";
    case Interpolation::bicubic:
      return "bicubic";
  }
  return "?";
}

const char* padding_mode_name(PaddingMode mode) noexcept {
  switch (mode) {
    case PaddingMode::zeros:
      return "zeros";
    case PaddingMode::border:
      return "border";
    case PaddingMode::reflection:
      return "reflection";
  }
  return "?";
}

Tensor affine_grid(const Tensor& theta, const Shape& size, bool align_corners) {
  if (size.size() == 5) return affine_grid_3d(theta, size, align_corners);
  const char* where = "affine_grid";
  const GridSize s = check_size(size, where);
  check_batch(theta, {s.n, 2, 3}, "theta", size, where);
  const std::vector<float> xs = base_coords(s.w, align_corners);
  const std::vector<float> ys = base_coords(s.h, align_corners);
  Tensor grid = Tensor::empty({s.n, s.h, s.w, 2});
  const float* th = theta.data();
  float* out = grid.data();
  // PyTorch multiplies [x, y, 1] by theta^T in a GEMM that accumulates x*t0, then fuses y*t1,
  // then adds t2: reproduced operation for operation, the grid is bit-exact.
  for_row_runs(s.n * s.h, s.h, 2 * s.w, [&](std::int64_t row, std::int64_t count) {
    detail::affine_grid_rows(xs.data(), ys.data() + row % s.h, count, th + (row / s.h) * 6,
                             out + row * s.w * 2, s.w);
  });
  return grid;
}

Tensor affine_grid_backward(const Tensor& grad_grid, const Shape& size, bool align_corners) {
  if (size.size() == 5) return affine_grid_3d_backward(grad_grid, size, align_corners);
  const char* where = "affine_grid_backward";
  const GridSize s = check_size(size, where);
  check_batch(grad_grid, {s.n, s.h, s.w, 2}, "grad_grid", size, where);
  const std::vector<float> xs = base_coords(s.w, align_corners);
  const std::vector<float> ys = base_coords(s.h, align_corners);
  Tensor grad_theta = Tensor::empty({s.n, 2, 3});
  const float* gg = grad_grid.data();
  float* gt = grad_theta.data();
  // grad_theta[n] = sum_{h,w} grad_grid[n,h,w]^T (x_w, y_h, 1), accumulated in double.
  detail::parallel_for(s.n, [&](std::int64_t n) {
    double acc[2][3] = {{0, 0, 0}, {0, 0, 0}};
    const float* g = gg + n * s.h * s.w * 2;
    for (std::int64_t h = 0; h < s.h; ++h) {
      const double y = ys[static_cast<std::size_t>(h)];
      for (std::int64_t w = 0; w < s.w; ++w, g += 2) {
        const double x = xs[static_cast<std::size_t>(w)];
        for (int k = 0; k < 2; ++k) {
          acc[k][0] += g[k] * x;
          acc[k][1] += g[k] * y;
          acc[k][2] += g[k];
        }
      }
    }
    for (int k = 0; k < 2; ++k) {
      for (int j = 0; j < 3; ++j) gt[n * 6 + k * 3 + j] = static_cast<float>(acc[k][j]);
    }
  });
  return grad_theta;
}

Tensor projective_grid(const Tensor& homography, const Shape& size, bool align_corners) {
  const char* where = "projective_grid";
  const GridSize s = check_size(size, where);
  check_batch(homography, {s.n, 3, 3}, "homography", size, where);
  const std::vector<float> xs = base_coords(s.w, align_corners);
  const std::vector<float> ys = base_coords(s.h, align_corners);
  Tensor grid = Tensor::empty({s.n, s.h, s.w, 2});
  const float* hm = homography.data();
  float* out = grid.data();
  constexpr double kHorizon = 1e-12;  // |w'| below this is treated as +-kHorizon
  constexpr double kFar = 1e6;        // quotients are clamped to [-kFar, kFar]
  detail::parallel_for(s.n * s.h, [&](std::int64_t row) {
    const float* m = hm + (row / s.h) * 9;
    const double y = ys[static_cast<std::size_t>(row % s.h)];
    float* o = out + row * s.w * 2;
    for (std::int64_t w = 0; w < s.w; ++w) {
      const double x = xs[static_cast<std::size_t>(w)];
      const double px = double{m[0]} * x + double{m[1]} * y + double{m[2]};
      const double py = double{m[3]} * x + double{m[4]} * y + double{m[5]};
      double pw = double{m[6]} * x + double{m[7]} * y + double{m[8]};
      if (std::fabs(pw) < kHorizon) pw = pw < 0.0 ? -kHorizon : kHorizon;
      // std::clamp would turn NaN into a bound; NaN entries must propagate.
      auto limit = [](double q) { return q > kFar ? kFar : (q < -kFar ? -kFar : q); };
      o[2 * w] = static_cast<float>(limit(px / pw));
      o[2 * w + 1] = static_cast<float>(limit(py / pw));
    }
  });
  return grid;
}

Tensor regular_control_points(std::int64_t rows, std::int64_t cols) {
  CVATTN_CHECK(rows >= 2 && cols >= 2, ValueError,
               "regular_control_points: rows and cols expected >= 2, got ", rows, " x ", cols);
  (void)checked_numel({rows, cols, 2}, "regular_control_points");
  Tensor pts = Tensor::empty({rows * cols, 2});
  float* p = pts.data();
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c, p += 2) {
      p[0] =
          static_cast<float>(-1.0 + 2.0 * static_cast<double>(c) / static_cast<double>(cols - 1));
      p[1] =
          static_cast<float>(-1.0 + 2.0 * static_cast<double>(r) / static_cast<double>(rows - 1));
    }
  }
  return pts;
}

Tensor tps_grid(const Tensor& source_points, const Tensor& target_points, const Shape& size,
                bool align_corners) {
  const char* where = "tps_grid";
  const GridSize s = check_size(size, where);
  check_batch(source_points, {s.n, kAny, 2}, "source_points", size, where);
  const std::int64_t k = source_points.dim(1);
  CVATTN_CHECK(k >= 3, ValueError, where,
               ": tensor 'source_points' expected at least 3 control points, got ", k);
  check_defined(target_points, "target_points", where);
  const bool shared = target_points.rank() == 2;
  CVATTN_CHECK((shared && target_points.shape() == Shape({k, 2})) ||
                   target_points.shape() == Shape({s.n, k, 2}),
               ShapeError, where, ": tensor 'target_points' expected ", to_string({k, 2}), " or ",
               to_string({s.n, k, 2}), " (K of 'source_points' ", to_string(source_points.shape()),
               "), got ", to_string(target_points.shape()));
  CVATTN_CHECK(target_points.all_finite(), ValueError, where,
               ": tensor 'target_points' must be finite");

  // Solve [[U, P], [P^T, 0]] [w; a] = [source; 0] per distinct target set, in double.
  const std::int64_t systems = shared ? 1 : s.n;
  const auto kk = static_cast<Eigen::Index>(k);
  std::vector<Eigen::MatrixXd> coef(static_cast<std::size_t>(s.n));  // (K+3) x 2 per image
  const float* tp = target_points.data();
  const float* sp = source_points.data();
  for (std::int64_t i = 0; i < systems; ++i) {
    const float* t = tp + i * k * 2;
    Eigen::MatrixXd l = Eigen::MatrixXd::Zero(kk + 3, kk + 3);
    for (Eigen::Index a = 0; a < kk; ++a) {
      for (Eigen::Index b = 0; b < kk; ++b) {
        const double dx = double{t[2 * a]} - t[2 * b];
        const double dy = double{t[2 * a + 1]} - t[2 * b + 1];
        l(a, b) = tps_kernel(dx * dx + dy * dy);
      }
      l(a, kk) = l(kk, a) = 1.0;
      l(a, kk + 1) = l(kk + 1, a) = t[2 * a];
      l(a, kk + 2) = l(kk + 2, a) = t[2 * a + 1];
    }
    const Eigen::FullPivLU<Eigen::MatrixXd> lu(l);
    CVATTN_CHECK(lu.rank() == kk + 3, ValueError, where,
                 ": tensor 'target_points' expected K distinct points not all on one line"
                 " (the TPS system is singular)",
                 shared ? "" : detail::concat(" for image ", i));
    const std::int64_t first = shared ? 0 : i;
    const std::int64_t last = shared ? s.n : i + 1;
    for (std::int64_t n = first; n < last; ++n) {
      Eigen::MatrixXd rhs = Eigen::MatrixXd::Zero(kk + 3, 2);
      const float* src = sp + n * k * 2;
      for (Eigen::Index a = 0; a < kk; ++a) {
        rhs(a, 0) = src[2 * a];
        rhs(a, 1) = src[2 * a + 1];
      }
      coef[static_cast<std::size_t>(n)] = lu.solve(rhs);
    }
  }

  const std::vector<float> xs = base_coords(s.w, align_corners);
  const std::vector<float> ys = base_coords(s.h, align_corners);
  Tensor grid = Tensor::empty({s.n, s.h, s.w, 2});
  float* out = grid.data();
  detail::parallel_for(s.n * s.h, [&](std::int64_t row) {
    const std::int64_t n = row / s.h;
    const Eigen::MatrixXd& c = coef[static_cast<std::size_t>(n)];
    const float* t = tp + (shared ? 0 : n * k * 2);
    const double y = ys[static_cast<std::size_t>(row % s.h)];
    float* o = out + row * s.w * 2;
    for (std::int64_t w = 0; w < s.w; ++w) {
      const double x = xs[static_cast<std::size_t>(w)];
      double gx = c(kk, 0) + c(kk + 1, 0) * x + c(kk + 2, 0) * y;
      double gy = c(kk, 1) + c(kk + 1, 1) * x + c(kk + 2, 1) * y;
      for (Eigen::Index a = 0; a < kk; ++a) {
        const double dx = x - t[2 * a];
        const double dy = y - t[2 * a + 1];
        const double u = tps_kernel(dx * dx + dy * dy);
        gx += c(a, 0) * u;
        gy += c(a, 1) * u;
      }
      o[2 * w] = static_cast<float>(gx);
      o[2 * w + 1] = static_cast<float>(gy);
    }
  });
  return grid;
}

}  // namespace cvattn::functional

// Per-target bodies of detail::affine_grid_row and affine_grid_row_3d (affine_grid_kernel.hpp).
#if defined(CVATTN_AFFINE_GRID_KERNEL_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_AFFINE_GRID_KERNEL_INL_H_
#undef CVATTN_AFFINE_GRID_KERNEL_INL_H_
#else
#define CVATTN_AFFINE_GRID_KERNEL_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>
#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

void AffineGridRow(const float* xs, float y, const float* t, float* out, std::int64_t w) {
  std::int64_t i = 0;
#if HWY_NATIVE_FMA
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto vy = hn::Set(d, y);
  const auto t0 = hn::Set(d, t[0]), t1 = hn::Set(d, t[1]), t2 = hn::Set(d, t[2]);
  const auto t3 = hn::Set(d, t[3]), t4 = hn::Set(d, t[4]), t5 = hn::Set(d, t[5]);
  for (; i + lanes <= w; i += lanes) {
    const auto x = hn::LoadU(d, xs + i);
    const auto gx = hn::Add(hn::MulAdd(vy, t1, hn::Mul(x, t0)), t2);
    const auto gy = hn::Add(hn::MulAdd(vy, t4, hn::Mul(x, t3)), t5);
    hn::StoreInterleaved2(gx, gy, d, out + 2 * i);
  }
#endif
  for (; i < w; ++i) {
    const float x = xs[i];
    out[2 * i] = std::fma(y, t[1], x * t[0]) + t[2];
    out[2 * i + 1] = std::fma(y, t[4], x * t[3]) + t[5];
  }
}

void AffineGridRows(const float* xs, const float* ys, std::int64_t rows, const float* t, float* out,
                    std::int64_t w) {
  for (std::int64_t r = 0; r < rows; ++r) AffineGridRow(xs, ys[r], t, out + r * 2 * w, w);
}

// 3-D rows: out[3i + k] = fma(z, r[2], fma(y, r[1], xs[i] * r[0])) + r[3], r = t + 4k.
void AffineGridRows3d(const float* xs, const float* ys, std::int64_t rows, float z, const float* t,
                      float* out, std::int64_t w) {
#if HWY_NATIVE_FMA
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<std::int64_t>(hn::Lanes(d));
  const auto vz = hn::Set(d, z);
  const auto t0 = hn::Set(d, t[0]), t1 = hn::Set(d, t[1]), t2 = hn::Set(d, t[2]);
  const auto t3 = hn::Set(d, t[3]), t4 = hn::Set(d, t[4]), t5 = hn::Set(d, t[5]);
  const auto t6 = hn::Set(d, t[6]), t7 = hn::Set(d, t[7]), t8 = hn::Set(d, t[8]);
  const auto t9 = hn::Set(d, t[9]), t10 = hn::Set(d, t[10]), t11 = hn::Set(d, t[11]);
#endif
  for (std::int64_t r = 0; r < rows; ++r) {
    const float y = ys[r];
    float* o = out + r * 3 * w;
    std::int64_t i = 0;
#if HWY_NATIVE_FMA
    const auto vy = hn::Set(d, y);
    for (; i + lanes <= w; i += lanes) {
      const auto x = hn::LoadU(d, xs + i);
      const auto gx = hn::Add(hn::MulAdd(vz, t2, hn::MulAdd(vy, t1, hn::Mul(x, t0))), t3);
      const auto gy = hn::Add(hn::MulAdd(vz, t6, hn::MulAdd(vy, t5, hn::Mul(x, t4))), t7);
      const auto gz = hn::Add(hn::MulAdd(vz, t10, hn::MulAdd(vy, t9, hn::Mul(x, t8))), t11);
      hn::StoreInterleaved3(gx, gy, gz, d, o + 3 * i);
    }
#endif
    for (; i < w; ++i) {
      const float x = xs[i];
      for (int k = 0; k < 3; ++k) {
        const float* c = t + 4 * k;
        o[3 * i + k] = std::fma(z, c[2], std::fma(y, c[1], x * c[0])) + c[3];
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace cvattn::detail
HWY_AFTER_NAMESPACE();

#endif  // include guard

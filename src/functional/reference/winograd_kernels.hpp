#pragma once
// Reference twin of functional/detail/winograd_kernels.hpp: the F(4x4, 3x3) transforms as plain
// loops over one tile at a time, the oracle of the parity test run on every SIMD target.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace cvattn::reference {

// B^T on six values, with the kernels' grouping of the sums.
inline void winograd43_input_rows(const float* d, float* t) {
  const float d4_d2 = d[4] - d[2];
  t[0] = 1.5f * (d[3] - d[1]) + ((d[0] + d[4]) - 2.0f * d[2]);
  t[1] = 2.5f * d[3] + (0.5f * d[2] + (d[4] - d[1]));
  t[2] = 0.5f * d[3] + ((d[4] + d[1]) - 2.5f * d[2]);
  t[3] = 2.0f * (d[3] - d[1]) + d4_d2;
  t[4] = 0.5f * (d[1] - d[3]) + d4_d2;
  t[5] = 1.5f * d4_d2 + ((d[5] + d[1]) - 2.0f * d[3]);
}

// A^T on six values.
inline void winograd43_output_rows(const float* m, float* y) {
  const float p = m[1] + m[2], q = m[1] - m[2];
  y[0] = (m[0] + p) + (m[3] + m[4]);
  y[1] = 0.5f * m[3] + (q - 2.0f * m[4]);
  y[2] = 0.25f * m[3] + (4.0f * m[4] + p);
  y[3] = 0.125f * m[3] + ((q + m[5]) - 8.0f * m[4]);
}

// winograd43_input: V = B^T d B tile by tile (rows as in the header; no scratch).
inline void winograd43_input(const float* const* rows, std::int64_t tw, float* v,
                             std::int64_t step) {
  for (std::int64_t tx = 0; tx < tw; ++tx) {
    float col[6][6];  // col[i][c]: B^T along y of column c of the tile
    for (int c = 0; c < 6; ++c) {
      float d[6];
      for (int r = 0; r < 6; ++r) d[r] = rows[r][4 * tx + c];
      float t[6];
      winograd43_input_rows(d, t);
      for (int i = 0; i < 6; ++i) col[i][c] = t[i];
    }
    for (int i = 0; i < 6; ++i) {
      float t[6];
      winograd43_input_rows(col[i], t);
      for (int j = 0; j < 6; ++j) v[(6 * i + j) * step + tx] = t[j];
    }
  }
}

// winograd43_output: Y = A^T M A + bias tile by tile.
inline void winograd43_output(const float* m, std::int64_t step, std::int64_t tw, float bias,
                              float* out, std::int64_t ld, std::int64_t rows, std::int64_t wo) {
  for (std::int64_t tx = 0; tx < tw; ++tx) {
    float s[4][6];  // A^T along y, row k, column j
    for (int j = 0; j < 6; ++j) {
      float col[6];
      for (int i = 0; i < 6; ++i) col[i] = m[(6 * i + j) * step + tx];
      float y[4];
      winograd43_output_rows(col, y);
      for (int k = 0; k < 4; ++k) s[k][j] = y[k];
    }
    for (std::int64_t k = 0; k < rows; ++k) {
      float y[4];
      winograd43_output_rows(s[k], y);
      for (int j = 0; j < 4; ++j) {
        if (4 * tx + j < wo) out[k * ld + 4 * tx + j] = y[j] + bias;
      }
    }
  }
}

// G on three values with the kernel's grouping (4a, 2b and 4c are exact).
inline void winograd43_weight_rows(float a, float b, float c, float* r) {
  const float ac = a + c, two_b = b + b;
  r[0] = a;
  r[1] = (ac + b) * (1.0f / 3);
  r[2] = (b - ac) * (1.0f / 3);
  r[3] = ((4.0f * a + c) + two_b) * (-4.0f / 15);
  r[4] = ((4.0f * c + a) - two_b) * (1.0f / 15);
  r[5] = c;
}

// winograd43_weights_rows: U = G g G^T kernel by kernel.
inline void winograd43_weights_rows(const float* k, std::int64_t count, float* u,
                                    std::int64_t plane) {
  for (std::int64_t c = 0; c < count; ++c) {
    const float* g = k + 9 * c;
    float gk[6][3];  // G along y
    for (int j = 0; j < 3; ++j) {
      float col[6];
      winograd43_weight_rows(g[j], g[3 + j], g[6 + j], col);
      for (int i = 0; i < 6; ++i) gk[i][j] = col[i];
    }
    for (int i = 0; i < 6; ++i) {
      float row[6];
      winograd43_weight_rows(gk[i][0], gk[i][1], gk[i][2], row);
      for (int j = 0; j < 6; ++j) u[(6 * i + j) * plane + c] = row[j];
    }
  }
}

// max |x[i]| over i < n, or +infinity when any x[i] is NaN or infinite.
inline float winograd_max_abs(const float* x, std::int64_t n) {
  float result = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return std::numeric_limits<float>::infinity();
    result = std::max(result, std::fabs(x[i]));
  }
  return result;
}

// winograd_copy_rows: the copy, then winograd_max_abs row by row.
inline float winograd_copy_rows(const float* src, std::int64_t src_ld, std::int64_t rows,
                                std::int64_t cols, float* dst, std::int64_t dst_ld) {
  float top = 0.0f;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::copy(src + r * src_ld, src + r * src_ld + cols, dst + r * dst_ld);
    top = std::max(top, winograd_max_abs(src + r * src_ld, cols));
  }
  return top;
}

}  // namespace cvattn::reference

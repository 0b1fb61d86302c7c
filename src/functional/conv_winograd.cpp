// conv2d for 3x3 kernels with stride 1 and dilation 1 by Winograd (Lavin & Gray, 2015):
// F(4x4, 3x3) costs 36 multiplies per 4x4 output tile and (input, output) channel pair instead of
// 144, F(2x2, 3x3) 16 instead of 36. F(2x2, 3x3) only adds and halves, so its float32 error stays
// at the level of the direct sum; F(4x4, 3x3) is taken when a bound on its error stays well
// inside the 1e-4 bar (kWinograd43Bound in conv_kernels.hpp; docs/functional.md).
//
// Layout: the transformed weights U[P][Cout][Cin_g] (P = 16 or 36 tile positions), and per
// task (image, group, run of tile rows) the transformed input V[P][Cin_g][T] and the products
// M[P][Cout_g][T] for T tiles, so each tile position is one GEMM M[xi] = U[xi] * V[xi].
#include <atomic>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "core/cache_sizes.hpp"
#include "core/workspace.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/core/tensor.hpp"
#include "functional/detail/conv_kernels.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/gemm_kernels.hpp"
#include "functional/detail/pointwise_kernels.hpp"
#include "functional/detail/window.hpp"
#include "functional/detail/winograd_kernels.hpp"

namespace cvattn::functional::detail {
namespace {

constexpr std::int64_t kPositions = 16;  // a transformed tile is 4x4
// Tiles per GEMM: enough columns for Eigen's kernel, while V and M of one task stay in L2/L3.
constexpr std::int64_t kChunkTiles = 160;

// U[xi][o][c] = (G k G^T)[xi] for the 3x3 kernel k of (o, c), with
// G = [[1, 0, 0], [1/2, 1/2, 1/2], [1/2, -1/2, 1/2], [0, 0, 1]]. Blocks of channels are
// transformed tile-major on the stack and then stored plane by plane: storing each kernel
// straight into the 16 planes of u, 16 KiB apart at 64 channels, thrashes L1 sets.
}  // namespace

void winograd_weights(const ConvGeometry& g, const float* wt, float* u) {
  constexpr std::int64_t kBlock = 64;
  const std::int64_t plane = g.cout * g.cin_g;
  cvattn::detail::parallel_for(g.cout, [&](std::int64_t o) {
    float block[kBlock * kPositions];
    for (std::int64_t c0 = 0; c0 < g.cin_g; c0 += kBlock) {
      const std::int64_t count = std::min(kBlock, g.cin_g - c0);
      for (std::int64_t c = 0; c < count; ++c) {
        const float* k = wt + (o * g.cin_g + c0 + c) * 9;
        float t[4][3];  // G k
        for (int j = 0; j < 3; ++j) {
          t[0][j] = k[j];
          t[1][j] = 0.5f * (k[j] + k[3 + j] + k[6 + j]);
          t[2][j] = 0.5f * (k[j] - k[3 + j] + k[6 + j]);
          t[3][j] = k[6 + j];
        }
        for (int i = 0; i < 4; ++i) {  // (G k) G^T, row i
          block[(i * 4 + 0) * kBlock + c] = t[i][0];
          block[(i * 4 + 1) * kBlock + c] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
          block[(i * 4 + 2) * kBlock + c] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
          block[(i * 4 + 3) * kBlock + c] = t[i][2];
        }
      }
      for (std::int64_t xi = 0; xi < kPositions; ++xi) {
        std::copy(block + xi * kBlock, block + xi * kBlock + count,
                  u + xi * plane + o * g.cin_g + c0);
      }
    }
  });
}

namespace {

// GCC only vectorises these loops when it knows the arrays do not overlap.
#define CVATTN_RESTRICT __restrict

// (d0 - d2, d1 + d2, d2 - d1, d1 - d3) elementwise over n columns: B^T along y.
void transform_columns(const float* CVATTN_RESTRICT d0, const float* CVATTN_RESTRICT d1,
                       const float* CVATTN_RESTRICT d2, const float* CVATTN_RESTRICT d3,
                       float* CVATTN_RESTRICT t0, float* CVATTN_RESTRICT t1,
                       float* CVATTN_RESTRICT t2, float* CVATTN_RESTRICT t3, std::int64_t n) {
  for (std::int64_t k = 0; k < n; ++k) {
    t0[k] = d0[k] - d2[k];
    t1[k] = d1[k] + d2[k];
    t2[k] = d2[k] - d1[k];
    t3[k] = d1[k] - d3[k];
  }
}

// B^T along x for tile tx: (x0 - x2, x1 + x2, x2 - x1, x1 - x3) with x0 = even[tx],
// x1 = odd[tx], x2 = even[tx + 1], x3 = odd[tx + 1].
void transform_tiles(const float* CVATTN_RESTRICT even, const float* CVATTN_RESTRICT odd,
                     float* CVATTN_RESTRICT v0, float* CVATTN_RESTRICT v1,
                     float* CVATTN_RESTRICT v2, float* CVATTN_RESTRICT v3, std::int64_t tw) {
  for (std::int64_t tx = 0; tx < tw; ++tx) {
    v0[tx] = even[tx] - even[tx + 1];
    v1[tx] = odd[tx] + even[tx + 1];
    v2[tx] = even[tx + 1] - odd[tx];
    v3[tx] = odd[tx] - odd[tx + 1];
  }
}

// A^T M A for a row of tiles: m[xi] points at tile position xi of tile 0 (4x4 row-major),
// y00..y11 receive the 2x2 outputs of each tile, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]].
void inverse_tiles(const float* const* m, float b, float* CVATTN_RESTRICT y00,
                   float* CVATTN_RESTRICT y01, float* CVATTN_RESTRICT y10,
                   float* CVATTN_RESTRICT y11, std::int64_t tw) {
  const float* CVATTN_RESTRICT m0 = m[0];
  const float* CVATTN_RESTRICT m1 = m[1];
  const float* CVATTN_RESTRICT m2 = m[2];
  const float* CVATTN_RESTRICT m3 = m[3];
  const float* CVATTN_RESTRICT m4 = m[4];
  const float* CVATTN_RESTRICT m5 = m[5];
  const float* CVATTN_RESTRICT m6 = m[6];
  const float* CVATTN_RESTRICT m7 = m[7];
  const float* CVATTN_RESTRICT m8 = m[8];
  const float* CVATTN_RESTRICT m9 = m[9];
  const float* CVATTN_RESTRICT m10 = m[10];
  const float* CVATTN_RESTRICT m11 = m[11];
  const float* CVATTN_RESTRICT m12 = m[12];
  const float* CVATTN_RESTRICT m13 = m[13];
  const float* CVATTN_RESTRICT m14 = m[14];
  const float* CVATTN_RESTRICT m15 = m[15];
  for (std::int64_t tx = 0; tx < tw; ++tx) {
    // Rows of A^T M: s0 = row0 + row1 + row2, s1 = row1 - row2 - row3.
    const float s00 = m0[tx] + m4[tx] + m8[tx], s10 = m4[tx] - m8[tx] - m12[tx];
    const float s01 = m1[tx] + m5[tx] + m9[tx], s11 = m5[tx] - m9[tx] - m13[tx];
    const float s02 = m2[tx] + m6[tx] + m10[tx], s12 = m6[tx] - m10[tx] - m14[tx];
    const float s03 = m3[tx] + m7[tx] + m11[tx], s13 = m7[tx] - m11[tx] - m15[tx];
    y00[tx] = s00 + s01 + s02 + b;
    y01[tx] = s01 - s02 - s03 + b;
    y10[tx] = s10 + s11 + s12 + b;
    y11[tx] = s11 - s12 - s13 + b;
  }
}

// out[2k] = a[k], out[2k + 1] = b[k] for 2k (+1) < n.
void interleave(const float* CVATTN_RESTRICT a, const float* CVATTN_RESTRICT b,
                float* CVATTN_RESTRICT out, std::int64_t n) {
  const std::int64_t pairs = n / 2;
  for (std::int64_t k = 0; k < pairs; ++k) {
    out[2 * k] = a[k];
    out[2 * k + 1] = b[k];
  }
  if (n % 2) out[n - 1] = a[pairs];
}

struct Scratch {
  float* v;     // [16][cin_g][tiles]
  float* m;     // [16][cout_g][tiles]
  float* rows;  // 16 rows of tw + 1: input rows split into even/odd columns, then transformed
  float* out;   // 4 rows of tw
};

// Copies input row `iy` (zero outside the image) as even[k] = x[2k - pw], odd[k] = x[2k+1-pw]
// for k in [0, tw + 1): the columns that tile tx reads are even[tx], odd[tx], even[tx + 1],
// odd[tx + 1].
void split_row(const ConvGeometry& g, const float* plane, std::int64_t iy, std::int64_t tw,
               ValidRange even_range, ValidRange odd_range, float* even, float* odd) {
  const std::int64_t len = tw + 1;
  if (!(iy >= 0 && iy < g.h)) {
    std::fill(even, even + len, 0.0f);
    std::fill(odd, odd + len, 0.0f);
    return;
  }
  const float* row = plane + iy * g.w;
  std::fill(even, even + even_range.lo, 0.0f);
  for (std::int64_t k = even_range.lo; k < even_range.hi; ++k) even[k] = row[2 * k - g.pw];
  std::fill(even + even_range.hi, even + len, 0.0f);
  std::fill(odd, odd + odd_range.lo, 0.0f);
  for (std::int64_t k = odd_range.lo; k < odd_range.hi; ++k) odd[k] = row[2 * k + 1 - g.pw];
  std::fill(odd + odd_range.hi, odd + len, 0.0f);
}

// V = B^T d B for every tile of tile rows [ty0, ty1) and every channel of one group, with
// B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]. Both passes run along
// whole tile rows so that they vectorise.
void transform_input(const ConvGeometry& g, const float* planes, std::int64_t ty0, std::int64_t ty1,
                     std::int64_t tw, std::int64_t tiles, const Scratch& s) {
  const std::int64_t len = tw + 1;
  const ValidRange even_range = valid_range(g.w, len, 2, -g.pw);
  const ValidRange odd_range = valid_range(g.w, len, 2, 1 - g.pw);
  float* e[4];
  float* o[4];
  for (int r = 0; r < 4; ++r) {
    e[r] = s.rows + (2 * r) * len;
    o[r] = s.rows + (2 * r + 1) * len;
  }
  float* te[4];
  float* to[4];
  for (int i = 0; i < 4; ++i) {
    te[i] = s.rows + (8 + 2 * i) * len;
    to[i] = s.rows + (9 + 2 * i) * len;
  }
  for (std::int64_t c = 0; c < g.cin_g; ++c) {
    const float* plane = planes + c * g.h * g.w;
    for (std::int64_t ty = ty0; ty < ty1; ++ty) {
      for (int r = 0; r < 4; ++r) {
        split_row(g, plane, 2 * ty - g.ph + r, tw, even_range, odd_range, e[r], o[r]);
      }
      transform_columns(e[0], e[1], e[2], e[3], te[0], te[1], te[2], te[3], len);
      transform_columns(o[0], o[1], o[2], o[3], to[0], to[1], to[2], to[3], len);
      const std::int64_t base = c * tiles + (ty - ty0) * tw;
      for (int i = 0; i < 4; ++i) {
        float* v = s.v + (i * 4) * g.cin_g * tiles + base;
        const std::int64_t step = g.cin_g * tiles;
        transform_tiles(te[i], to[i], v, v + step, v + 2 * step, v + 3 * step, tw);
      }
    }
  }
}

// Y = A^T M A + bias for every tile, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]], written into the
// output planes of one group, dropping the row and column past an odd output size.
void transform_output(const ConvGeometry& g, const float* bias, std::int64_t ty0, std::int64_t ty1,
                      std::int64_t tw, std::int64_t tiles, const Scratch& s, float* planes) {
  float* y00 = s.out;
  float* y01 = s.out + tw;
  float* y10 = s.out + 2 * tw;
  float* y11 = s.out + 3 * tw;
  for (std::int64_t oc = 0; oc < g.cout_g; ++oc) {
    const float b = bias ? bias[oc] : 0.0f;
    float* plane = planes + oc * g.ho * g.wo;
    for (std::int64_t ty = ty0; ty < ty1; ++ty) {
      const float* m[kPositions];
      for (std::int64_t xi = 0; xi < kPositions; ++xi) {
        m[xi] = s.m + (xi * g.cout_g + oc) * tiles + (ty - ty0) * tw;
      }
      inverse_tiles(m, b, y00, y01, y10, y11, tw);
      interleave(y00, y01, plane + 2 * ty * g.wo, g.wo);
      if (2 * ty + 1 < g.ho) interleave(y10, y11, plane + (2 * ty + 1) * g.wo, g.wo);
    }
  }
}

// ---- F(4x4, 3x3) -------------------------------------------------------------------------

constexpr std::int64_t kPositions43 = 36;  // a transformed tile is 6x6
// Tiles per task. Where 60 % of the core's L2 holds V and M of at least 64 tiles (36 x (Cin_g +
// Cout_g) floats per tile; the rest of the L2 is for U and the input rows), the most it holds,
// up to 128: on an Emerald Rapids Xeon (2 MiB L2) [1,64,56,56] in runs of 4 tile rows (56 tiles,
// 1.2 MB) is 6 % faster than in runs of 7 (98 tiles, 2.1 MB, which spill to the slower L3).
// Otherwise at most 128 tiles and 2.5 MB from the L3: on Zen 3 (512 KiB L2) 128 tiles was best
// on that shape, 64 8 % slower, a whole image 15 % (docs/performance.md).
constexpr std::int64_t kChunkTiles43 = 128;
constexpr std::int64_t kL2MinTiles43 = 64;
constexpr std::int64_t kChunkFloats43 = 640 * 1024;
std::int64_t chunk_tiles43(const ConvGeometry& g) {
  const std::int64_t per_tile = kPositions43 * (g.cin_g + g.cout_g);
  const std::int64_t in_l2 = cvattn::detail::cache_bytes(2) / 10 * 6 / 4 / per_tile;
  if (in_l2 >= kL2MinTiles43) return std::min(in_l2, kChunkTiles43);
  return std::clamp<std::int64_t>(kChunkFloats43 / per_tile, 16, kChunkTiles43);
}

struct Scratch43 {
  float* v;  // [36][cin_g * ld + slack]: channel c's T tiles at c * ld
  float* m;  // [36][cout_g * ld + slack]
  std::int64_t v_plane, m_plane;
  float* rows;  // the task's 4 T + 2 zero-padded input rows, winograd43_row_floats(tw) each
  float* t;     // 6 rows transformed along y, the same size
};

// V for every tile of tile rows [ty0, ty1) and every channel of one group, tile row ty at
// (ty - ty0) rs in each channel's row of ld floats; with rs > tw the rs - tw tiles past the
// image's edge are transformed too (finite values that no output reads), so that the rows are
// whole and aligned vectors. Each channel's input rows are copied once into zero-padded rows
// (zeroed once per task: the padding and the rows outside the image are the same for every
// channel). Returns max |x| over the input rows it read (+infinity for NaN or infinity).
float transform_input43(const ConvGeometry& g, const float* planes, std::int64_t ty0,
                        std::int64_t ty1, std::int64_t tw, std::int64_t rs, std::int64_t ld,
                        const Scratch43& s) {
  const std::int64_t len = winograd43_row_floats(tw);
  const std::int64_t count = 4 * (ty1 - ty0) + 2;
  const std::int64_t y0 = 4 * ty0 - g.ph;  // input row of padded row 0
  const ValidRange valid = valid_range(g.h, count, 1, y0);
  const std::int64_t cols = std::max<std::int64_t>(0, std::min(len, g.pw + g.w) - g.pw);
  std::fill(s.rows, s.rows + count * len, 0.0f);
  float top = 0.0f;
  for (std::int64_t c = 0; c < g.cin_g; ++c) {
    const float* plane = planes + c * g.h * g.w;
    if (valid.hi > valid.lo) {
      top =
          std::max(top, winograd_copy_rows(plane + (y0 + valid.lo) * g.w, g.w, valid.hi - valid.lo,
                                           cols, s.rows + valid.lo * len + g.pw, len));
    }
    for (std::int64_t ty = ty0; ty < ty1; ++ty) {
      const float* rows[6];
      for (int r = 0; r < 6; ++r) rows[r] = s.rows + (4 * (ty - ty0) + r) * len;
      winograd43_input(rows, rs, s.t, s.v + c * ld + (ty - ty0) * rs, s.v_plane);
    }
  }
  return top;
}

// Y = A^T M A + bias for every tile, written into the output planes of one group, dropping the
// rows and columns past the output size.
void transform_output43(const ConvGeometry& g, const float* bias, std::int64_t ty0,
                        std::int64_t ty1, std::int64_t tw, std::int64_t rs, std::int64_t ld,
                        const Scratch43& s, float* planes) {
  for (std::int64_t oc = 0; oc < g.cout_g; ++oc) {
    const float b = bias ? bias[oc] : 0.0f;
    float* plane = planes + oc * g.ho * g.wo;
    for (std::int64_t ty = ty0; ty < ty1; ++ty) {
      winograd43_output(s.m + oc * ld + (ty - ty0) * rs, s.m_plane, tw, b, plane + 4 * ty * g.wo,
                        g.wo, std::min<std::int64_t>(4, g.ho - 4 * ty), g.wo);
    }
  }
}

// Runs of tile rows for the tasks: `chunks` runs per (image, group) whose lengths differ by at
// most one. With several threads: at least kTasksPerThread tasks each, and a task count that
// is a multiple of the thread count, since the threads take equal shares of the tasks (7 tasks
// on 2 threads would cap the speed-up at 1.75x).
struct TilePlan {
  std::int64_t th, tw, chunks, rows, tasks, slots;
  TilePlan(const ConvGeometry& g, std::int64_t tile, std::int64_t chunk_tiles) {
    th = ceil_div(g.ho, tile);
    tw = ceil_div(g.wo, tile);
    const std::int64_t rows_cap = std::max<std::int64_t>(1, chunk_tiles / tw);
    const std::int64_t jobs = g.n * g.groups;
    const std::int64_t threads = cvattn::detail::max_threads();
    chunks = ceil_div(th, rows_cap);
    if (threads > 1) {
      chunks = std::min(th, std::max(chunks, ceil_div(detail::kTasksPerThread * threads, jobs)));
      while (chunks < th && (jobs * chunks) % threads != 0) ++chunks;
    }
    rows = ceil_div(th, chunks);  // the longest run
    tasks = jobs * chunks;
    slots = std::min<std::int64_t>(threads, tasks);
  }
  // Runs body(Task, scratch) for every task, each thread on its slot of `slot_size` floats.
  // The scratch is allocated (and checked against the size cap) before any parallel region,
  // and kept for the next call (page faults on fresh scratch cost more than 5% of the conv and
  // do not scale).
  struct Task {
    std::int64_t ni, gi, ty0, ty1, tiles;
  };
  template <class Body>
  void run(const ConvGeometry& g, std::int64_t slot_size, Body&& body) const {
    const cvattn::detail::Workspace workspace({slots, slot_size}, "conv2d (Winograd scratch)");
    float* ws = workspace.data();
    for_each_task(tasks, slots, [&](std::int64_t t, std::int64_t slot) {
      const std::int64_t chunk = t % chunks;
      const std::int64_t ng = t / chunks;
      Task k{ng / g.groups, ng % g.groups, th * chunk / chunks, th * (chunk + 1) / chunks, 0};
      k.tiles = (k.ty1 - k.ty0) * tw;
      body(k, ws + slot * slot_size);
    });
  }
};

// M[xi] = U[xi] V[xi] for the `positions` tile positions of one task (V and M planes v_plane
// and m_plane floats apart, rows of `tiles` columns ld floats apart), beta 0 (no zeroing pass).
// `panels`, if any, holds U[xi] of each group packed for the product (index xi * groups + gi,
// Conv2dWeight::winograd43_panels); u may then be null.
void tile_products(const ConvGeometry& g, std::int64_t positions, const float* u, std::int64_t gi,
                   const float* v, std::int64_t v_plane, float* m, std::int64_t m_plane,
                   std::int64_t tiles, std::int64_t ld,
                   const std::vector<cvattn::detail::PackedA>* panels = nullptr) {
  if (panels != nullptr) {
    for (std::int64_t xi = 0; xi < positions; ++xi) {
      const auto& packed = (*panels)[static_cast<std::size_t>(xi * g.groups + gi)];
      const float* pa = packed.panels_for(g.cout_g, g.cin_g);
      CVATTN_CHECK(pa != nullptr, Error, "conv2d: packed Winograd kernel not usable");
      cvattn::detail::sgemm_packed_pre(pa, cvattn::detail::Trans::no, g.cout_g, tiles, g.cin_g,
                                       1.0f, v + xi * v_plane, ld, 0.0f, m + xi * m_plane, ld);
    }
    return;
  }
  // Few input channels: the pointwise kernel's register tile reads U and V in place, where a
  // GEMM would pack both for a product too small to repay it. It runs over the whole row
  // stride: V's padding columns are zero, so are M's.
  if (g.cin_g <= pointwise_preferred_max_k()) {
    for (std::int64_t xi = 0; xi < positions; ++xi) {
      pointwise_act(ActLayer::identity, u + (xi * g.cout + gi * g.cout_g) * g.cin_g, g.cout_g,
                    g.cin_g, v + xi * v_plane, ld, ld, nullptr, m + xi * m_plane, ld);
    }
    return;
  }
  for (std::int64_t xi = 0; xi < positions; ++xi) {
    cvattn::detail::sgemm(cvattn::detail::Trans::no, cvattn::detail::Trans::no, g.cout_g, tiles,
                          g.cin_g, 1.0f, u + (xi * g.cout + gi * g.cout_g) * g.cin_g, g.cin_g,
                          v + xi * v_plane, ld, 0.0f, m + xi * m_plane, ld);
  }
}

// The fused activation on a task's output rows [y0, y1) of each channel, still cached.
void act_rows(const ConvGeometry& g, ActLayer act, float* o, std::int64_t y0, std::int64_t y1) {
  if (act == ActLayer::identity) return;
  for (std::int64_t c = 0; c < g.cout_g; ++c) {
    act_block(act, o + c * g.ho * g.wo + y0 * g.wo, 1, (y1 - y0) * g.wo, 0);
  }
}

void conv_winograd_2x2(const ConvGeometry& g, const float* in, const float* bias, float* out,
                       const float* u, ActLayer act) {
  const TilePlan plan(g, 2, kChunkTiles);
  const std::int64_t tw = plan.tw;
  const std::int64_t tiles_cap = plan.rows * tw;
  const std::int64_t v_size = kPositions * g.cin_g * tiles_cap;
  const std::int64_t m_size = kPositions * g.cout_g * tiles_cap;
  const std::int64_t slot_size = detail::slot_stride(v_size + m_size + 16 * (tw + 1) + 4 * tw);
  plan.run(g, slot_size, [&](const TilePlan::Task& k, float* base) {
    const Scratch s{base, base + v_size, base + v_size + m_size,
                    base + v_size + m_size + 16 * (tw + 1)};
    transform_input(g, in + (k.ni * g.cin + k.gi * g.cin_g) * g.h * g.w, k.ty0, k.ty1, tw, k.tiles,
                    s);
    tile_products(g, kPositions, u, k.gi, s.v, g.cin_g * k.tiles, s.m, g.cout_g * k.tiles, k.tiles,
                  k.tiles);
    float* o = out + (k.ni * g.cout + k.gi * g.cout_g) * g.ho * g.wo;
    transform_output(g, bias ? bias + k.gi * g.cout_g : nullptr, k.ty0, k.ty1, tw, k.tiles, s, o);
    act_rows(g, act, o, 2 * k.ty0, std::min(g.ho, 2 * k.ty1));
  });
}

// F(4x4, 3x3) while max |x| * scale <= kWinograd43Bound, x over the input rows the tasks copy
// (every row and column that reaches an output, so the same maximum as a pass over the input).
// Returns false, with part of `out` written, when a task finds the bound broken: the caller then
// takes F(2x2, 3x3), which writes every output again.
bool conv_winograd_4x4(const ConvGeometry& g, const float* in, const float* bias, float* out,
                       const float* u, const std::vector<cvattn::detail::PackedA>* panels,
                       ActLayer act, float scale) {
  const TilePlan plan(g, 4, chunk_tiles43(g));
  const std::int64_t tw = plan.tw;
  const std::int64_t tiles_cap = plan.rows * tw;
  const std::int64_t len = winograd43_row_floats(tw);
  // Each position's plane of V and M has a vector of slack: the transforms move whole vectors.
  // Its rows of T tiles are padded to a multiple of 16 floats (zeros in V), so that the products
  // run over whole vectors: 98 tiles as 64 + 48 columns, not 64 + 32 + a tail of 2.
  const auto row_stride = [](std::int64_t tiles) { return ceil_div(tiles, 16) * 16; };
  const std::int64_t v_size = kPositions43 * (g.cin_g * row_stride(tiles_cap) + kWinogradLanes);
  const std::int64_t m_size = kPositions43 * (g.cout_g * row_stride(tiles_cap) + kWinogradLanes);
  const std::int64_t rows_size = (4 * plan.rows + 2) * len;
  const std::int64_t slot_size = detail::slot_stride(v_size + m_size + rows_size + 6 * len);
  // Each tile row at a multiple of 16 floats where that costs no product columns (rows of 14
  // tiles in 16, as the tiles of a 56x56 map, against 98 tiles padded to 112): the transforms'
  // vectors are then aligned and V's padding is their own output, with no zeroing pass.
  const std::int64_t rs_whole = row_stride(tw);
  std::atomic<bool> over{false};
  plan.run(g, slot_size, [&](const TilePlan::Task& k, float* base) {
    if (over.load(std::memory_order_relaxed)) return;
    float* rows = base + v_size + m_size;
    const bool whole_rows = (k.ty1 - k.ty0) * rs_whole <= row_stride(k.tiles);
    const std::int64_t rs = whole_rows ? rs_whole : tw;
    const std::int64_t ld = whole_rows ? (k.ty1 - k.ty0) * rs : row_stride(k.tiles);
    const Scratch43 s{
        base, base + v_size,   g.cin_g * ld + kWinogradLanes, g.cout_g * ld + kWinogradLanes,
        rows, rows + rows_size};
    // The slack after each plane of M is read past the last tile row: zero, not stale bits. The
    // padding columns of V enter the products: zero too.
    for (std::int64_t xi = 0; xi < kPositions43; ++xi) {
      std::fill_n(s.m + xi * s.m_plane + g.cout_g * ld, kWinogradLanes, 0.0f);
      if (whole_rows || ld == k.tiles) continue;
      for (std::int64_t c = 0; c < g.cin_g; ++c) {
        std::fill(s.v + xi * s.v_plane + c * ld + k.tiles, s.v + xi * s.v_plane + (c + 1) * ld,
                  0.0f);
      }
    }
    const float top = transform_input43(g, in + (k.ni * g.cin + k.gi * g.cin_g) * g.h * g.w, k.ty0,
                                        k.ty1, tw, rs, ld, s);
    if (!(top * scale <= kWinograd43Bound)) {
      over.store(true, std::memory_order_relaxed);
      return;
    }
    tile_products(g, kPositions43, u, k.gi, s.v, s.v_plane, s.m, s.m_plane,
                  whole_rows ? ld : k.tiles, ld, panels);
    float* o = out + (k.ni * g.cout + k.gi * g.cout_g) * g.ho * g.wo;
    transform_output43(g, bias ? bias + k.gi * g.cout_g : nullptr, k.ty0, k.ty1, tw, rs, ld, s, o);
    act_rows(g, act, o, 4 * k.ty0, std::min(g.ho, 4 * k.ty1));
  });
  return !over.load();
}

}  // namespace

void winograd43_weights(const ConvGeometry& g, const float* wt, float* u) {
  // One output channel's cin_g kernels per dispatched call, written plane by plane (36 planes of
  // cout x cin_g; scattered stores, kernel by kernel, would thrash L1 sets).
  const std::int64_t plane = g.cout * g.cin_g;
  cvattn::detail::parallel_for(g.cout, [&](std::int64_t o) {
    winograd43_weights_rows(wt + o * g.cin_g * 9, g.cin_g, u + o * g.cin_g, plane);
  });
}

float winograd_weight_scale(const ConvGeometry& g, const float* wt) {
  // A bound, not a result: float sums in 8 lanes are precise enough.
  constexpr int kLanes = 8;
  const std::int64_t n = g.cin_g * 9;
  float worst = 0.0f;
  for (std::int64_t o = 0; o < g.cout; ++o) {
    const float* w = wt + o * n;
    float lanes[kLanes] = {};
    std::int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] += w[i + l] * w[i + l];
    }
    float sq = 0.0f;
    for (; i < n; ++i) sq += w[i] * w[i];
    for (int l = 0; l < kLanes; ++l) sq += lanes[l];
    worst = std::isnan(sq) ? std::numeric_limits<float>::infinity() : std::max(worst, sq);
  }
  const float scale = std::sqrt(worst) * std::sqrt(static_cast<float>(g.cin_g));
  return std::isfinite(scale) ? scale : std::numeric_limits<float>::infinity();
}

bool winograd43_pays(const ConvGeometry& g) {
  // 36 products per 4x4 tile against 16 per 2x2 tile; the larger tiles waste the rows and
  // columns past an output size that is not a multiple of 4, and their transforms cost more
  // per product, so they must save a quarter of the products.
  const std::int64_t t4 = ceil_div(g.ho, 4) * ceil_div(g.wo, 4);
  const std::int64_t t2 = ceil_div(g.ho, 2) * ceil_div(g.wo, 2);
  return 4 * kPositions43 * t4 <= 3 * kPositions * t2;
}

void conv_winograd_3x3(const ConvGeometry& g, const float* in, const float* wt, const float* bias,
                       float* out, const PreparedWeights& prepared, ActLayer act) {
  if (winograd43_pays(g)) {
    const float scale =
        prepared.weight != nullptr ? prepared.scale() : winograd_weight_scale(g, wt);
    // The input's bound is checked as the tasks copy it (conv_winograd_4x4); a scale that no
    // input can pass skips the attempt.
    if (std::isfinite(scale)) {
      // Over many input channels the products run on the GEMM: the prepared kernel packed for
      // it once, where it would pack U on every call (half a 14x14 conv's product time).
      const std::vector<cvattn::detail::PackedA>* panels = nullptr;
      if (g.cin_g > pointwise_preferred_max_k()) panels = prepared.u43_panels();
      if (panels != nullptr && panels->front().panels_for(g.cout_g, g.cin_g) == nullptr) {
        panels = nullptr;  // packed for another target's register tile
      }
      const float* u43 = panels != nullptr ? nullptr : prepared.u43();
      std::optional<cvattn::detail::Workspace> own;
      if (!u43 && !panels) {
        own.emplace(Shape{kPositions43, g.cout, g.cin_g}, "conv2d (Winograd weights)");
        winograd43_weights(g, wt, own->data());
        u43 = own->data();
      }
      if (conv_winograd_4x4(g, in, bias, out, u43, panels, act, scale)) return;
    }
  }
  const float* u22 = prepared.u22();
  std::optional<cvattn::detail::Workspace> own;
  if (!u22) {
    own.emplace(Shape{kPositions, g.cout, g.cin_g}, "conv2d (Winograd weights)");
    winograd_weights(g, wt, own->data());
  }
  conv_winograd_2x2(g, in, bias, out, u22 ? u22 : own->data(), act);
}

}  // namespace cvattn::functional::detail

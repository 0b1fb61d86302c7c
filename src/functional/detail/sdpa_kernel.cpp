#include "functional/detail/sdpa_kernel.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>


#include "core/parallel_for.hpp"
#include "cvattn/core/tensor.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/softmax.hpp"
#include "functional/detail/transpose.hpp"

namespace cvattn::detail {
namespace {

std::int64_t round_up(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

// Query rows per task, balanced so the last block is not a sliver.
std::int64_t block_rows(std::int64_t L, std::int64_t target, std::int64_t multiple) {
  const std::int64_t blocks = (L + target - 1) / target;
  return round_up((L + blocks - 1) / blocks, multiple);
}

// Row i of head h's normalised weights (numerators x[0..kmax) times inv, 0 past kmax) into the
// result: stored per head, or accumulated into its head group's mean.
void emit_weights(const SdpaPlan& p, std::int64_t h, std::int64_t i, const float* x,
                  std::int64_t kmax, float inv) {
  const float a = inv != 0.0f ? inv : 1.0f;  // inv = 0: x is all 0 (fully masked) or NaN already
  if (p.weights != nullptr) {
    float* w = p.weights + (h * p.L + i) * p.S;
    scale_into(x, kmax, a, w);
    zero_row(w + kmax, p.S - kmax);
    return;
  }
  const std::int64_t g = p.avg_group;
  float* w = p.weights_avg + ((h / g) * p.L + i) * p.S;
  const float b = a / static_cast<float>(g);
  if (h % g == 0) {  // the group's first head starts the sum
    scale_into(x, kmax, b, w);
    zero_row(w + kmax, p.S - kmax);
  } else {
    scale_add_into(x, kmax, b, w);
  }
}

#if CVATTN_DETAIL_AVX2
// ---------------------------------------------------------------------------------------------
// AVX2 path: per head, K and V are packed once into 16-wide panels (K transposed and scaled by
// scale*log2 e, its last panel 4, 8 or 16 wide; V zero padded); each block of query rows then
// runs all QK^T tiles, the softmax rows and all PV tiles, so the packed operand of each phase
// stays in L1 (one strip at a time through all three phases alternates K and V in L1 and
// measured ~20% slower). The 6x16 register tiles (12 accumulators) keep both FMA pipes busy;
// nothing is repacked per block and nothing is zero-filled, unlike a general GEMM per block.

constexpr std::int64_t kTileRows = 6;
constexpr std::int64_t kPanel = 16;

// The register tiles' loops over rows and vectors must unroll before GCC decides where the
// accumulator arrays live; otherwise it keeps a copy in memory and stores them every step.
#define CVATTN_UNROLL _Pragma("GCC unroll 16")

// Width of the key panel starting at j0: 16, except that the last one is cut to 4 or 8 (a
// 4-wide tile uses 128-bit FMAs, which on cores that split 256-bit ops run at the same FLOP
// rate), so S = 196 wastes nothing instead of computing 12 padded columns per row.
std::int64_t panel_width(std::int64_t S, std::int64_t j0) {
  const std::int64_t n = S - j0;
  return n > 8 ? kPanel : n > 4 ? 8 : 4;
}

// Row stride of the score rows: every panel's full width.
std::int64_t padded_keys(std::int64_t S) {
  const std::int64_t full = S / kPanel * kPanel;
  return full == S ? S : full + panel_width(S, full);
}

// Kp[j0 * E + e * w + jj] = K[j0 + jj][e] for the panel at j0 of width w (0 past S).
void pack_k(const float* k, std::int64_t k_rs, std::int64_t S, std::int64_t E, float* kp) {
  for (std::int64_t j0 = 0; j0 < S; j0 += kPanel) {
    float* dst = kp + j0 * E;
    const std::int64_t w = panel_width(S, j0), n = std::min(w, S - j0);
    std::int64_t e0 = 0;
    if (n == kPanel) {  // full panels: 8x8 register transposes
      for (; e0 + 8 <= E; e0 += 8) {
        transpose8x8(k + j0 * k_rs + e0, k_rs, dst + e0 * kPanel, kPanel);
        transpose8x8(k + (j0 + 8) * k_rs + e0, k_rs, dst + e0 * kPanel + 8, kPanel);
      }
    }
    for (std::int64_t e = e0; e < E; ++e) {
      for (std::int64_t jj = 0; jj < n; ++jj) dst[e * w + jj] = k[(j0 + jj) * k_rs + e];
      for (std::int64_t jj = n; jj < w; ++jj) dst[e * w + jj] = 0.0f;
    }
  }
}

// Vp[cp][k][0..16) = V[k][cp*16 + cc] (0 past Ev).
void pack_v(const float* v, std::int64_t v_rs, std::int64_t S, std::int64_t Ev, float* vp) {
  for (std::int64_t c0 = 0; c0 < Ev; c0 += kPanel) {
    float* dst = vp + c0 * S;
    const std::int64_t n = std::min(kPanel, Ev - c0);
    for (std::int64_t k = 0; k < S; ++k) {
      const float* src = v + k * v_rs + c0;
      for (std::int64_t cc = 0; cc < n; ++cc) dst[k * kPanel + cc] = src[cc];
      for (std::int64_t cc = n; cc < kPanel; ++cc) dst[k * kPanel + cc] = 0.0f;
    }
  }
}

// c[r][0..W) = sum_e a[r][e] * bp[e][0..W) for r < R, W = 16 or 8. With vmax, also folds the
// first `valid` columns into the running per-lane row maxima vmax[r][0..8) (the softmax then
// needs no separate max pass).
// Inlined into the strip's panel loop: the call and the ramp at each end of a 32-step tile cost
// ~2% of the kernel otherwise.
template <int R, int W>
inline __attribute__((always_inline)) void tile_qk(const float* a, std::int64_t lda,
                                                   const float* bp, std::int64_t E, float* c,
                                                   std::int64_t ldc, float* vmax,
                                                   std::int64_t valid) {
  constexpr int NV = W / 8;
  __m256 acc[R][NV];
  CVATTN_UNROLL
  for (int r = 0; r < R; ++r) {
    CVATTN_UNROLL
    for (int u = 0; u < NV; ++u) acc[r][u] = _mm256_setzero_ps();
  }
  for (std::int64_t e = 0; e < E; ++e) {
    __m256 b[NV];
    CVATTN_UNROLL
    for (int u = 0; u < NV; ++u) b[u] = _mm256_loadu_ps(bp + e * W + 8 * u);
    CVATTN_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + r * lda + e);
      CVATTN_UNROLL
      for (int u = 0; u < NV; ++u) acc[r][u] = _mm256_fmadd_ps(x, b[u], acc[r][u]);
    }
  }
  CVATTN_UNROLL
  for (int r = 0; r < R; ++r) {
    CVATTN_UNROLL
    for (int u = 0; u < NV; ++u) _mm256_storeu_ps(c + r * ldc + 8 * u, acc[r][u]);
  }
  if (vmax == nullptr) return;
  const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  CVATTN_UNROLL
  for (int r = 0; r < R; ++r) {
    __m256 m = lowest;
    CVATTN_UNROLL
    for (int u = 0; u < NV; ++u) {
      // Zero-padded keys past S must not raise the maximum.
      const std::int64_t lanes = valid - 8 * u;
      if (lanes >= 8) {
        m = _mm256_max_ps(m, acc[r][u]);
      } else if (lanes > 0) {
        m = _mm256_max_ps(
            m, _mm256_blendv_ps(lowest, acc[r][u], _mm256_castsi256_ps(tail_lanes(lanes))));
      }
    }
    float* vm = vmax + r * 8;
    _mm256_storeu_ps(vm, _mm256_max_ps(_mm256_loadu_ps(vm), m));
  }
}

// The 4-wide last panel in 128-bit registers; maxima fold into lanes 0..3 of vmax.
template <int R>
void tile_qk4(const float* a, std::int64_t lda, const float* bp, std::int64_t E, float* c,
              std::int64_t ldc, float* vmax, std::int64_t valid) {
  __m128 acc[R];
  CVATTN_UNROLL
  for (int r = 0; r < R; ++r) acc[r] = _mm_setzero_ps();
  for (std::int64_t e = 0; e < E; ++e) {
    const __m128 b = _mm_loadu_ps(bp + e * 4);
    CVATTN_UNROLL
    for (int r = 0; r < R; ++r) acc[r] = _mm_fmadd_ps(_mm_broadcast_ss(a + r * lda + e), b, acc[r]);
  }
  CVATTN_UNROLL
  for (int r = 0; r < R; ++r) _mm_storeu_ps(c + r * ldc, acc[r]);
  if (vmax == nullptr) return;
  const __m128 lowest = _mm_set1_ps(-std::numeric_limits<float>::infinity());
  const __m128 keep = _mm_castsi128_ps(
      _mm_cmpgt_epi32(_mm_set1_epi32(static_cast<int>(std::min<std::int64_t>(valid, 4))),
                      _mm_setr_epi32(0, 1, 2, 3)));
  CVATTN_UNROLL
  for (int r = 0; r < R; ++r) {
    float* vm = vmax + r * 8;
    _mm_storeu_ps(vm, _mm_max_ps(_mm_loadu_ps(vm), _mm_blendv_ps(lowest, acc[r], keep)));
  }
}

// out[r][0..cols) = scale[r] * sum_{k<K} p[r][k] * vp[k][0..cols) for r < R.
template <int R>
void tile_pv(const float* p, std::int64_t ldp, const float* vp, std::int64_t K, float* out,
             std::int64_t ldo, std::int64_t cols, const float* scale) {
  __m256 acc[R][2];
  CVATTN_UNROLL
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < K; ++k) {
    const __m256 b0 = _mm256_loadu_ps(vp + k * kPanel);
    const __m256 b1 = _mm256_loadu_ps(vp + k * kPanel + 8);
    CVATTN_UNROLL
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(p + r * ldp + k);
      acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
    }
  }
  CVATTN_UNROLL
  for (int r = 0; r < R; ++r) {
    const __m256 s = _mm256_set1_ps(scale[r]);
    const __m256 o0 = _mm256_mul_ps(acc[r][0], s), o1 = _mm256_mul_ps(acc[r][1], s);
    float* dst = out + r * ldo;
    if (cols == kPanel) {
      _mm256_storeu_ps(dst, o0);
      _mm256_storeu_ps(dst + 8, o1);
    } else {
      alignas(32) float tmp[kPanel];
      _mm256_store_ps(tmp, o0);
      _mm256_store_ps(tmp + 8, o1);
      std::memcpy(dst, tmp, static_cast<std::size_t>(cols) * 4);
    }
  }
}

// Scratch floats one thread needs.
std::int64_t scratch_size(const SdpaPlan& p, std::int64_t block) {
  const std::int64_t Sp = padded_keys(p.S);
  return Sp * p.E + round_up(p.Ev, kPanel) * p.S + block * (Sp + 8 + 1);
}

template <int R>
void qk_strip(const SdpaPlan& p, const float* qrow, const float* kp, std::int64_t kmax,
              std::int64_t Sp, float* scores, float* vmax) {
  for (std::int64_t j0 = 0; j0 < kmax; j0 += kPanel) {
    const float* panel = kp + j0 * p.E;
    switch (panel_width(p.S, j0)) {
      case kPanel:
        tile_qk<R, kPanel>(qrow, p.q_rs, panel, p.E, scores + j0, Sp, vmax, p.S - j0);
        break;
      case 8: tile_qk<R, 8>(qrow, p.q_rs, panel, p.E, scores + j0, Sp, vmax, p.S - j0); break;
      default: tile_qk4<R>(qrow, p.q_rs, panel, p.E, scores + j0, Sp, vmax, p.S - j0); break;
    }
  }
}

template <int R>
void pv_strip(const SdpaPlan& p, const float* probs, std::int64_t ldp, const float* vp,
              std::int64_t kmax, float* out, const float* inv) {
  for (std::int64_t c0 = 0; c0 < p.Ev; c0 += kPanel) {
    tile_pv<R>(probs, ldp, vp + c0 * p.S, kmax, out + c0, p.out_rs, std::min(kPanel, p.Ev - c0),
               inv);
  }
}

// Calls f.template operator()<R>() for the strip height R in [1, 6] (tiles are templates).
template <class F>
void with_rows(std::int64_t R, F&& f) {
  switch (R) {
    case 6: f(std::integral_constant<int, 6>()); break;
    case 5: f(std::integral_constant<int, 5>()); break;
    case 4: f(std::integral_constant<int, 4>()); break;
    case 3: f(std::integral_constant<int, 3>()); break;
    case 2: f(std::integral_constant<int, 2>()); break;
    default: f(std::integral_constant<int, 1>()); break;
  }
}

// One block of query rows of head h, in three phases so that each phase's operand stays in L1:
// all QK tiles (packed K), then the softmax rows, then all PV tiles (packed V).
void run_block(const SdpaPlan& p, std::int64_t h, std::int64_t r0, std::int64_t rows,
               std::int64_t block, float* scratch, bool pack) {
  const std::int64_t Sp = padded_keys(p.S);
  float* kp = scratch;
  float* vp = kp + Sp * p.E;
  float* scores = vp + round_up(p.Ev, kPanel) * p.S;
  float* vmax = scores + block * Sp;
  float* inv = vmax + block * 8;
  if (pack) {
    // Folding scale*log2(e) into the packed keys (once per head, in L1) leaves the softmax a
    // bare exp2 of score - max, and the QK tiles read the queries in place.
    pack_k(p.k + p.k_off[h], p.k_rs, p.S, p.E, kp);
    scale_into(kp, Sp * p.E, p.scale * kLog2e, kp);
    pack_v(p.v + p.v_off[h], p.v_rs, p.S, p.Ev, vp);
  }
  const float* q = p.q + p.q_off[h] + r0 * p.q_rs;
  // Row maxima come out of the QK tiles unless a per-key mask or the causal limit changes
  // which scores count.
  const bool fused_max = !p.causal && (p.mask == nullptr || p.mask_cs == 0);
  if (fused_max) {
    for (std::int64_t i = 0; i < rows * 8; ++i) vmax[i] = -std::numeric_limits<float>::infinity();
  }
  // Causal rows never look past their own index: those keys are skipped in both products.
  const auto kmax_of = [&](std::int64_t s0, std::int64_t R) {
    return p.causal ? std::min(p.S, r0 + s0 + R) : p.S;
  };
  for (std::int64_t s0 = 0; s0 < rows; s0 += kTileRows) {
    const std::int64_t R = std::min(kTileRows, rows - s0);
    with_rows(R, [&](auto n) {
      qk_strip<decltype(n)::value>(p, q + s0 * p.q_rs, kp, kmax_of(s0, R), Sp, scores + s0 * Sp,
                                   fused_max ? vmax + s0 * 8 : nullptr);
    });
  }
  // Softmax: the numerators stay in scratch for P V, whose output rows are scaled by 1/sum
  // instead (that rounds differently from normalising first, by ~1 ulp); the normalised
  // weights, when wanted, are written once, straight to the result tensor.
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t i = r0 + r;
    const std::int64_t s0 = r - r % kTileRows;  // the strip this row belongs to
    const std::int64_t kmax = kmax_of(s0, std::min(kTileRows, rows - s0));
    const float* mask = p.mask ? p.mask + p.mask_off[h] + i * p.mask_rs : nullptr;
    float* row = scores + r * Sp;
    if (fused_max && mask == nullptr) {
      inv[r] = softmax2_numerator_unmasked(row, kmax, hmax256(_mm256_loadu_ps(vmax + r * 8)));
    } else {
      const float row_max = fused_max ? hmax256(_mm256_loadu_ps(vmax + r * 8)) : 0.0f;
      inv[r] = softmax2_numerator(row, kmax, mask, p.mask_cs, p.causal ? i + 1 : p.S,
                                  fused_max ? &row_max : nullptr);
    }
    if (p.weights || p.weights_avg) emit_weights(p, h, i, row, kmax, inv[r]);
  }
  float* out = p.out + p.out_off[h] + r0 * p.out_rs;
  for (std::int64_t s0 = 0; s0 < rows; s0 += kTileRows) {
    const std::int64_t R = std::min(kTileRows, rows - s0);
    with_rows(R, [&](auto n) {
      pv_strip<decltype(n)::value>(p, scores + s0 * Sp, Sp, vp, kmax_of(s0, R),
                                   out + s0 * p.out_rs, inv + s0);
    });
  }
}

constexpr std::int64_t kBlockTarget = 48;
constexpr std::int64_t kAveragedBlockTarget = 128;
constexpr std::int64_t kBlockMultiple = kTileRows;

#else
// ---------------------------------------------------------------------------------------------
// Portable path: two GEMMs per block of query rows.

constexpr std::int64_t kBlockTarget = 64;
constexpr std::int64_t kAveragedBlockTarget = 128;
constexpr std::int64_t kBlockMultiple = 1;

std::int64_t scratch_size(const SdpaPlan& p, std::int64_t block) {
  return block * (p.E + 1) + (p.weights ? 0 : block * p.S);
}

void run_block(const SdpaPlan& p, std::int64_t h, std::int64_t r0, std::int64_t rows,
               std::int64_t /*block*/, float* scratch, bool /*pack*/) {
  const float c = p.scale * kLog2e;
  float* qs = scratch;
  float* inv = qs + rows * p.E;
  const float* q = p.q + p.q_off[h] + r0 * p.q_rs;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t e = 0; e < p.E; ++e) qs[r * p.E + e] = q[r * p.q_rs + e] * c;
  }
  float* scores = p.weights ? p.weights + (h * p.L + r0) * p.S : inv + rows;
  sgemm(Trans::no, Trans::yes, rows, p.S, p.E, 1.0f, qs, p.E, p.k + p.k_off[h], p.k_rs, 0.0f,
        scores, p.S);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t i = r0 + r;
    const float* mask = p.mask ? p.mask + p.mask_off[h] + i * p.mask_rs : nullptr;
    float* row = scores + r * p.S;
    inv[r] = softmax2_numerator(row, p.S, mask, p.mask_cs, p.causal ? i + 1 : p.S);
    if (p.weights) {
      scale_row(row, p.S, inv[r]);
    } else if (p.weights_avg) {
      emit_weights(p, h, i, row, p.S, inv[r]);
    }
  }
  float* o = p.out + p.out_off[h] + r0 * p.out_rs;
  sgemm(Trans::no, Trans::no, rows, p.Ev, p.S, 1.0f, scores, p.S, p.v + p.v_off[h], p.v_rs, 0.0f, o,
        p.out_rs);
  if (!p.weights) {
    for (std::int64_t r = 0; r < rows; ++r) scale_row(o + r * p.out_rs, p.Ev, inv[r]);
  }
}
#endif

}  // namespace

void run_sdpa(const SdpaPlan& p) {
  if (p.heads == 0 || p.L == 0) return;
  if (p.S == 0) {  // nothing to attend: zero output (weights are empty)
    for (std::int64_t h = 0; h < p.heads; ++h) {
      for (std::int64_t i = 0; i < p.L; ++i) zero_row(p.out + p.out_off[h] + i * p.out_rs, p.Ev);
    }
    return;
  }
  // With a head-averaged map, a task runs all heads of a group on its rows (in order, the first
  // starting the sum), so no two threads add to the same rows. Each head is then packed once per
  // block, hence larger blocks; not sized by the thread count, which must not change results.
  const std::int64_t group = p.weights_avg ? p.avg_group : 1;
  const std::int64_t units = p.heads / group;
  const std::int64_t block =
      block_rows(p.L, group > 1 ? kAveragedBlockTarget : kBlockTarget, kBlockMultiple);
  const std::int64_t nblocks = (p.L + block - 1) / block;
  const std::int64_t tasks = units * nblocks;
  const std::int64_t threads =
      std::max<std::int64_t>(1, std::min<std::int64_t>(max_threads(), tasks));
  const std::int64_t per_thread = scratch_size(p, block);
  Tensor scratch = Tensor::empty({threads, per_thread});
  float* const scratch_data = scratch.data();
  // Each thread takes a contiguous range of (head group, block) tasks, so a head's packed K/V
  // are reused by all of its blocks on that thread.
  parallel_for(threads, [&](std::int64_t t) {
    const std::int64_t begin = tasks * t / threads, end = tasks * (t + 1) / threads;
    std::int64_t packed = -1;
    for (std::int64_t task = begin; task < end; ++task) {
      const std::int64_t r0 = (task % nblocks) * block;
      for (std::int64_t h = task / nblocks * group; h < (task / nblocks + 1) * group; ++h) {
        run_block(p, h, r0, std::min(block, p.L - r0), block, scratch_data + t * per_thread,
                  h != packed);
        packed = h;
      }
    }
  });
}

}  // namespace cvattn::detail

#include "functional/detail/gemm.hpp"

#include <Eigen/Core>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "cvattn/core/error.hpp"
#include "functional/detail/gemm_kernels.hpp"

#if defined(CVATTN_HAS_OPENBLAS)
// The few OpenBLAS entry points used, declared here rather than through cblas.h, whose location
// differs between Debian's BLAS alternatives.
extern "C" {
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                 int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                 float beta, float* c, int ldc);
int openblas_get_parallel(void);
void openblas_set_num_threads(int threads);
char* openblas_get_corename(void);
}
#endif

namespace cvattn::detail {
namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ColMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor>;
using ConstRow = Eigen::Map<const RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;
using ConstCol = Eigen::Map<const ColMat, Eigen::Unaligned, Eigen::OuterStride<>>;
using MutRow = Eigen::Map<RowMat, Eigen::Unaligned, Eigen::OuterStride<>>;

template <class A, class B>
void eigen_product(const A& a, const B& b, float alpha, float beta, MutRow& c) {
  if (beta == 0.0f) {
    c.noalias() = alpha * (a * b);
  } else {
    if (beta != 1.0f) c *= beta;
    c.noalias() += alpha * (a * b);
  }
}

#if defined(CVATTN_HAS_OPENBLAS)
// CVATTN_GEMM: "packed" or "openblas" forces that product (for measurements), anything else or
// unset lets sgemm choose.
enum class Choice { automatic, packed, openblas };
Choice g_choice = Choice::automatic;
std::once_flag g_once;
bool g_blas_wide = false;  // OpenBLAS runs AVX-512 kernels
std::string g_corename;
int g_parallel = -1;  // openblas_get_parallel(): 0 serial, 1 pthreads, 2 OpenMP
bool fits_int(std::int64_t v) { return v >= 0 && v <= INT_MAX; }

void configure() {
  std::call_once(g_once, [] {
    if (const char* env = std::getenv("CVATTN_GEMM")) {
      if (std::strcmp(env, "packed") == 0) g_choice = Choice::packed;
      if (std::strcmp(env, "openblas") == 0) g_choice = Choice::openblas;
    }
    g_parallel = openblas_get_parallel();
    // A pthreads OpenBLAS would start its own threads inside cvattn's OpenMP regions; the
    // OpenMP one runs serially there and follows omp_set_num_threads outside them.
    if (g_parallel == 1) openblas_set_num_threads(1);
    const char* core = openblas_get_corename();
    g_corename = core != nullptr ? core : "";
    std::string lower = g_corename;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    // OpenBLAS's cores with AVX-512 SGEMM kernels (0.3.21 and later).
    g_blas_wide = lower == "skylakex" || lower == "cooperlake" || lower == "sapphirerapids";
  });
}

// The packed product where OpenBLAS would use narrower vectors than the SIMD target in use has
// (its AVX2 kernels on an AVX-512 CPU: 118 against 200-225 GFLOP/s on Zen 5,
// docs/performance.md#matrix-products). Without OpenBLAS sgemm always takes it (Eigen's kernels
// are fixed at SSE2 in a portable build).
bool use_packed() {
  configure();
  if (g_choice != Choice::automatic) return g_choice == Choice::packed;
  return !g_blas_wide && sgemm_packed_wide();
}
#endif

}  // namespace

void sgemm_eigen(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                 const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta,
                 float* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  MutRow cm(c, m, n, Eigen::OuterStride<>(ldc));
  if (k == 0) {
    if (beta == 0.0f)
      cm.setZero();
    else
      cm *= beta;
    return;
  }
  // op(A) is row-major [m,k] with stride lda, or the transpose of a row-major [k,m] (= a
  // column-major [m,k] with stride lda); likewise op(B).
  if (ta == Trans::no && tb == Trans::no) {
    eigen_product(ConstRow(a, m, k, Eigen::OuterStride<>(lda)),
                  ConstRow(b, k, n, Eigen::OuterStride<>(ldb)), alpha, beta, cm);
  } else if (ta == Trans::no) {
    eigen_product(ConstRow(a, m, k, Eigen::OuterStride<>(lda)),
                  ConstCol(b, k, n, Eigen::OuterStride<>(ldb)), alpha, beta, cm);
  } else if (tb == Trans::no) {
    eigen_product(ConstCol(a, m, k, Eigen::OuterStride<>(lda)),
                  ConstRow(b, k, n, Eigen::OuterStride<>(ldb)), alpha, beta, cm);
  } else {
    eigen_product(ConstCol(a, m, k, Eigen::OuterStride<>(lda)),
                  ConstCol(b, k, n, Eigen::OuterStride<>(ldb)), alpha, beta, cm);
  }
}

void sgemm(Trans ta, Trans tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc) {
#if defined(CVATTN_HAS_OPENBLAS)
  // alpha 0 stays off OpenBLAS: its small-matrix kernels (the SkylakeX and Cooperlake cores, as
  // 0.3.21 runs Zen 4) still form A*B then, so a NaN or Inf in A reached C, where BLAS leaves A
  // unread.
  if (!use_packed() && alpha != 0.0f && m > 0 && n > 0 && k > 0 && fits_int(m) && fits_int(n) &&
      fits_int(k) && fits_int(lda) && fits_int(ldb) && fits_int(ldc)) {
    cblas_sgemm(CblasRowMajor, ta == Trans::no ? CblasNoTrans : CblasTrans,
                tb == Trans::no ? CblasNoTrans : CblasTrans, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
                static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
    return;
  }
#endif
  if (sgemm_packed_swaps(m, n, k)) {
    sgemm_packed_swapped(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    sgemm_packed(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

bool sgemm_swaps(std::int64_t m, std::int64_t n, std::int64_t k) {
#if defined(CVATTN_HAS_OPENBLAS)
  if (!use_packed()) return false;
#endif
  return sgemm_packed_swaps(m, n, k);
}

PackedA::PackedA(Trans ta, std::int64_t m, std::int64_t k, const float* a, std::int64_t lda,
                 Form form)
    : form_(form) {
  if (m <= 0 || k <= 0) return;
#if defined(CVATTN_HAS_OPENBLAS)
  if (!use_packed()) return;
#endif
  const bool rows = form == Form::rows;
  tile_ = rows ? sgemm_packed_rows() : sgemm_packed_cols();
  const std::int64_t floats = rows ? sgemm_packed_a_size(m, k) : sgemm_packed_at_size(m, k);
  // std::aligned_alloc wants a multiple of the alignment: whole blocks of 16 floats (floats * 4
  // fits, as the size functions check, so this cannot overflow).
  const auto bytes = static_cast<std::size_t>((floats + 15) / 16 * 64);
  panels_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
  if (!panels_) throw std::bad_alloc();
  if (rows) {
    sgemm_pack_a(ta, m, k, a, lda, panels_.get());
  } else {
    sgemm_pack_at(ta, m, k, a, lda, panels_.get());
  }
  m_ = m;
  k_ = k;
}

const float* PackedA::panels_for(std::int64_t m, std::int64_t k) const {
  if (!panels_ || m != m_ || k != k_) return nullptr;
#if defined(CVATTN_HAS_OPENBLAS)
  if (!use_packed()) return nullptr;
#endif
  // Another target (CVATTN_SIMD, or a test switching targets) may tile differently.
  const std::int64_t tile = form_ == Form::rows ? sgemm_packed_rows() : sgemm_packed_cols();
  return tile == tile_ ? panels_.get() : nullptr;
}

void sgemm_prepacked(const PackedA& packed, Trans ta, Trans tb, std::int64_t m, std::int64_t n,
                     std::int64_t k, float alpha, const float* a, std::int64_t lda, const float* b,
                     std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  const bool swap = sgemm_swaps(m, n, k);
  const float* panels = packed.panels_for(m, k);
  if (panels != nullptr &&
      packed.form() == (swap ? PackedA::Form::transposed : PackedA::Form::rows)) {
    if (swap) {
      sgemm_packed_pre_swapped(panels, tb, m, n, k, alpha, b, ldb, beta, c, ldc);
    } else {
      sgemm_packed_pre(panels, tb, m, n, k, alpha, b, ldb, beta, c, ldc);
    }
    return;
  }
  sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

std::string gemm_backend() {
  const std::string packed = "cvattn packed (this target's vectors)";
#if defined(CVATTN_HAS_OPENBLAS)
  configure();
  const std::string blas = g_parallel == 0 ? "openblas (serial, core " + g_corename + ")"
                           : g_parallel == 1
                               ? "openblas (pthreads, one thread per call, core " + g_corename + ")"
                               : "openblas (openmp, core " + g_corename + ")";
  return use_packed() ? packed + "; " + blas + " not used" : blas;
#else
  return packed;
#endif
}

}  // namespace cvattn::detail

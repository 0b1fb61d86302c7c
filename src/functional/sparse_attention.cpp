#include "cvattn/functional/sparse_attention.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <opencv2/flann.hpp>
#include <string>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/softmax.hpp"
#include "functional/detail/sparse_kernels.hpp"
#include "functional/detail/transpose.hpp"

namespace cvattn::functional {
namespace {

using cvattn::detail::Trans;
constexpr auto gemm = &cvattn::detail::sgemm;

// Splits [0, count) into one contiguous range per thread and gives each its own slice of
// scratch allocated up front (nothing is allocated inside the parallel region).
template <class Body>
void for_thread_ranges(std::int64_t count, Body&& body) {
  const std::int64_t threads =
      std::max<std::int64_t>(1, std::min<std::int64_t>(detail::max_threads(), count));
  detail::parallel_for(
      threads, [&](std::int64_t t) { body(t, count * t / threads, count * (t + 1) / threads); });
}

inline std::int64_t thread_slots(std::int64_t count) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(detail::max_threads(), count));
}

// x [N, C, H, W] -> [N, C, H, W + 2*pad] with pad zeros before and after every row.
Tensor padded_rows(const Tensor& x, std::int64_t pad) {
  const std::int64_t rows = x.dim(0) * x.dim(1) * x.dim(2), W = x.dim(3), Wp = W + 2 * pad;
  Tensor out = Tensor::empty({x.dim(0), x.dim(1), x.dim(2), Wp});
  const float* src = x.data();
  float* dst = out.data();
  detail::parallel_for(rows, [&](std::int64_t r) {
    float* o = dst + r * Wp;
    std::fill(o, o + pad, 0.0f);
    std::copy(src + r * W, src + (r + 1) * W, o + pad);
    std::fill(o + pad + W, o + Wp, 0.0f);
  });
  return out;
}

// Larger score first, then lower index; NaN last.
struct ByScore {
  const float* s;
  bool operator()(std::int32_t a, std::int32_t b) const {
    const bool na = std::isnan(s[a]), nb = std::isnan(s[b]);
    if (na != nb) return nb;
    if (!na && s[a] != s[b]) return s[a] > s[b];
    return a < b;
  }
};

// Exact top-k of one row of scores [S] into out[k], sorted (larger score first, then lower
// index; NaN ranks below every number). tmp is 2*S floats of scratch.
// The minimum of k block maxima is a lower bound of the k-th largest value (k distinct entries
// reach it), so only entries at or above it can be selected: typically a few k candidates,
// found with vectorised scans, instead of a selection over all S entries.
void top_k_row(const float* scores, std::int64_t S, std::int64_t k, float* tmp, std::int32_t* out) {
  const float lowest = -std::numeric_limits<float>::infinity();
  float* vals = tmp;      // scores with NaN as -inf
  float* cand = tmp + S;  // candidate values
  detail::nan_as_lowest(scores, S, vals);
  float bound = lowest;
  if (2 * k <= S) {
    const std::int64_t block = S / k;  // k full blocks; the tail joins no block (still a bound)
    bound = detail::min_of_block_maxima(vals, k, block);
  }
  const std::int64_t c = detail::values_at_least(vals, S, bound, cand);
  std::nth_element(cand, cand + (k - 1), cand + c, std::greater<float>());
  const float thr = cand[k - 1];
  const std::int64_t above = detail::indices_where(vals, S, thr, true, out, k);
  // Ties at the threshold (and NaN when the threshold is -inf) fill up in index order.
  (void)detail::indices_where(vals, S, thr, false, out + above, k - above);
  std::sort(out, out + k, ByScore{scores});
}

// Portable Gaussian samples (SplitMix64 + Box-Muller) so LSH codes do not depend on the
// standard library.
class Gaussian {
 public:
  static constexpr double kTwoPi = 6.283185307179586;
  explicit Gaussian(std::uint64_t seed) : state_(seed) {}
  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = 0;
    while (u1 <= 0) u1 = uniform();
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(kTwoPi * u2);
    has_spare_ = true;
    return r * std::cos(kTwoPi * u2);
  }

 private:
  double uniform() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
  }
  std::uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

void validate_search(const KeySearchOptions& o, std::int64_t S, const char* where) {
  CVATTN_CHECK(o.top_k() >= 1 && o.top_k() <= S, ValueError, where, ": top_k must be in [1, ", S,
               "] (the key count), got ", o.top_k());
  if (o.method() == KeySearch::kdtree) {
    CVATTN_CHECK(o.trees() >= 1 && o.trees() <= 64, ValueError, where,
                 ": trees must be in [1, 64], got ", o.trees());
    CVATTN_CHECK(o.checks() == -1 || o.checks() >= 1, ValueError, where,
                 ": checks must be -1 (unlimited) or positive, got ", o.checks());
  }
  if (o.method() == KeySearch::lsh) {
    CVATTN_CHECK(o.bits() >= 8 && o.bits() <= 4096 && o.bits() % 8 == 0, ValueError, where,
                 ": bits must be a multiple of 8 in [8, 4096], got ", o.bits());
    CVATTN_CHECK(o.table_number() >= 1 && o.table_number() <= 64, ValueError, where,
                 ": table_number must be in [1, 64], got ", o.table_number());
    CVATTN_CHECK(o.key_size() >= 1 && o.key_size() <= 24 && o.key_size() <= o.bits(), ValueError,
                 where, ": key_size must be in [1, min(24, bits)], got ", o.key_size());
    CVATTN_CHECK(o.multi_probe_level() >= 0 && o.multi_probe_level() <= 2, ValueError, where,
                 ": multi_probe_level must be in [0, 2], got ", o.multi_probe_level());
    CVATTN_CHECK(o.candidates() >= 0, ValueError, where,
                 ": candidates must be non-negative (0 = 8 * top_k), got ", o.candidates());
  }
}

// Exact selection for rows [r0, r1) of batch b (flat row = b*L + r).
void exact_rows(const float* q, const float* k, std::int64_t L, std::int64_t S, std::int64_t E,
                std::int64_t top_k, std::int64_t b, std::int64_t r0, std::int64_t r1, float* scores,
                float* tmp, std::int32_t* out) {
  const std::int64_t rows = r1 - r0;
  gemm(Trans::no, Trans::yes, rows, S, E, 1.0f, q + (b * L + r0) * E, E, k + b * S * E, E, 0.0f,
       scores, S);
  for (std::int64_t r = 0; r < rows; ++r) {
    top_k_row(scores + r * S, S, top_k, tmp, out + (b * L + r0 + r) * top_k);
  }
}

// Re-ranks a row's candidate list by exact q.k, keeping the best top_k distinct valid ones.
// Returns false when fewer than top_k remain (the caller then searches the row exactly).
bool rerank_row(const float* qrow, const float* k, std::int64_t S, std::int64_t E, const int* cand,
                std::int64_t ncand, std::int64_t top_k, float* cscore, std::int32_t* cidx,
                std::int32_t* out) {
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < ncand; ++i) {
    const int j = cand[i];
    if (!(j >= 0 && j < S)) continue;  // FLANN marks missing neighbours with -1
    bool seen = false;
    for (std::int64_t t = 0; t < n && !seen; ++t) seen = cidx[t] == j;
    if (seen) continue;
    cidx[n++] = j;
  }
  if (n < top_k) return false;
  detail::gathered_dots(qrow, k, E, cidx, n, cscore);
  // Insertion sort by score (ties: lower key index; NaN last): n is a few hundred at most.
  const auto before = [](float sa, std::int32_t ja, float sb, std::int32_t jb) {
    const bool na = std::isnan(sa), nb = std::isnan(sb);
    if (na != nb) return nb;
    if (!na && sa != sb) return sa > sb;
    return ja < jb;
  };
  for (std::int64_t i = 1; i < n; ++i) {
    const float s = cscore[i];
    const std::int32_t j = cidx[i];
    std::int64_t t = i;
    while (t > 0 && before(s, j, cscore[t - 1], cidx[t - 1])) {
      cscore[t] = cscore[t - 1];
      cidx[t] = cidx[t - 1];
      --t;
    }
    cscore[t] = s;
    cidx[t] = j;
  }
  std::copy(cidx, cidx + top_k, out);
  return true;
}

}  // namespace

KeySearch parse_key_search(std::string_view word) {
  if (word == "exact") return KeySearch::exact;
  if (word == "kdtree") return KeySearch::kdtree;
  if (word == "lsh") return KeySearch::lsh;
  throw ValueError(detail::concat("parse_key_search: unknown method '", std::string(word),
                                  "'; expected exact, kdtree or lsh"));
}

AttentionResult local_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                std::int64_t radius, std::optional<double> scale) {
  const char* where = "local_attention";
  const auto shape = q.nchw("q");  // no structured binding: clang-14 cannot capture those
  const std::int64_t N = shape.n, C = shape.c, H = shape.h, W = shape.w;
  check_shape(k, {N, C, H, W}, "k", where);
  (void)v.nchw("v");
  check_shape(v, {N, kAny, H, W}, "v", where);
  const std::int64_t Cv = v.dim(1);
  CVATTN_CHECK(C >= 1, ShapeError, where, ": tensor 'q' expected at least one channel, got ",
               to_string(q.shape()));
  CVATTN_CHECK(radius >= 0 && radius <= 1024, ValueError, where,
               ": radius must be in [0, 1024], got ", radius);
  const double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(C));
  CVATTN_CHECK(std::isfinite(s), ValueError, where, ": scale must be finite, got ", s);
  const float sc = static_cast<float>(s);
  const std::int64_t D = radius, side = 2 * D + 1, K2 = side * side;
  AttentionResult result;
  result.output = Tensor::empty({N, Cv, H, W});
  result.attn_weights = Tensor::empty({N, H, W, K2});
  if (N * H * W == 0) return result;
  // Keys and values with D zeros either side of every row, so that the window products run in
  // whole vectors over a row (the kernels read x + dx for x in [0, W), |dx| <= D).
  const std::int64_t Wp = W + 2 * D;
  Tensor kpad = padded_rows(k, D);
  Tensor vpad = padded_rows(v, D);
  // Per thread: the scores and then the weights of a pixel row, slot-major [K2][W].
  const std::int64_t rows = N * H;
  const std::int64_t per_thread = K2 * W;
  Tensor scratch = Tensor::empty({thread_slots(rows), per_thread});
  float* const scratch_data = scratch.data();
  const float* qd = q.data();
  const float* kd = kpad.data();
  const float* vd = vpad.data();
  float* od = result.output.data();
  float* wd = result.attn_weights.data();
  const std::int64_t HW = H * W, HWp = H * Wp;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for_thread_ranges(rows, [&](std::int64_t t, std::int64_t begin, std::int64_t end) {
    float* sc_rows = scratch_data + t * per_thread;  // [K2][W]
    for (std::int64_t ny = begin; ny < end; ++ny) {
      const std::int64_t n = ny / H, y = ny % H;
      // The window rows inside the image.
      const std::int64_t dy_lo = std::max(-D, -y), dy_hi = std::min(D, H - 1 - y);
      detail::local_scores_row(qd + n * C * HW + y * W, HW, kd + n * C * HWp + y * Wp + D, HWp, Wp,
                               C, W, D, dy_lo, dy_hi, sc_rows);
      // Slots outside the image -inf, then per pixel (rows of the [W][K2] map, in place in the
      // returned weights) normalised.
      for (std::int64_t dy = -D; dy <= D; ++dy) {
        for (std::int64_t dx = -D; dx <= D; ++dx) {
          float* srow = sc_rows + ((dy + D) * side + dx + D) * W;
          if (dy < dy_lo || dy > dy_hi) {
            std::fill(srow, srow + W, neg_inf);
            continue;
          }
          // x + dx inside [0, W) for x in [x0, x1).
          const std::int64_t x0 = std::clamp<std::int64_t>(-dx, 0, W);
          const std::int64_t x1 = std::clamp<std::int64_t>(W - dx, x0, W);
          std::fill(srow, srow + x0, neg_inf);
          std::fill(srow + x1, srow + W, neg_inf);
        }
      }
      float* wout = wd + ny * W * K2;  // [W][K2] of pixel row (n, y)
      detail::transpose(sc_rows, wout, K2, W);
      for (std::int64_t x = 0; x < W; ++x)
        detail::softmax_row(wout + x * K2, K2, sc, nullptr, 0, K2);
      // Back to slot-major for the weighted sum over shifted value rows (the weights of the
      // padding, finite, meet its zeros).
      detail::transpose(wout, sc_rows, W, K2);
      detail::local_sum_row(sc_rows, vd + n * Cv * HWp + y * Wp + D, HWp, Wp, Cv, W, D, dy_lo,
                            dy_hi, od + n * Cv * HW + y * W, HW);
    }
  });
  return result;
}

KeySelection select_keys(const Tensor& q, const Tensor& k, const KeySearchOptions& options) {
  const char* where = "select_keys";
  check_rank(q, 3, "q", where);
  check_rank(k, 3, "k", where);
  const std::int64_t B = q.dim(0), L = q.dim(1), E = q.dim(2), S = k.dim(1);
  check_shape(k, {B, kAny, E}, "k", where);
  CVATTN_CHECK(E >= 1, ShapeError, where, ": tensor 'q' expected E >= 1, got ",
               to_string(q.shape()));
  CVATTN_CHECK(S < INT_MAX, ShapeError, where, ": at most ", INT_MAX - 1, " keys, got ", S);
  CVATTN_CHECK(E < INT_MAX / 2, ShapeError, where, ": embedding too large, got ", E);
  validate_search(options, S, where);
  const std::int64_t top_k = options.top_k();
  KeySelection sel;
  sel.shape = {B, L, top_k};
  sel.indices.resize(static_cast<std::size_t>(checked_numel(sel.shape, where)));
  if (B * L == 0) return sel;
  const float* qd = q.data();
  const float* kd = k.data();
  std::int32_t* out = sel.indices.data();

  // Exact selection (also the fallback of the approximate methods): blocks of query rows.
  // Query rows per GEMM: enough that packing the keys is amortised, few enough that a thread's
  // score block stays within 16 MB.
  const std::int64_t kBlock = std::clamp<std::int64_t>((std::int64_t{1} << 22) / S, 1, 128);
  const std::int64_t blocks_per_batch = (L + kBlock - 1) / kBlock;
  const std::int64_t slots = std::max(1, detail::max_threads());
  const std::int64_t scratch_floats = kBlock * S;
  std::vector<float> scores(static_cast<std::size_t>(slots * scratch_floats));
  std::vector<float> tmp(static_cast<std::size_t>(slots * 2 * S));
  if (options.method() == KeySearch::exact) {
    for_thread_ranges(
        B * blocks_per_batch, [&](std::int64_t t, std::int64_t begin, std::int64_t end) {
          for (std::int64_t task = begin; task < end; ++task) {
            const std::int64_t b = task / blocks_per_batch;
            const std::int64_t r0 = (task % blocks_per_batch) * kBlock;
            exact_rows(qd, kd, L, S, E, top_k, b, r0, std::min(L, r0 + kBlock),
                       scores.data() + t * scratch_floats, tmp.data() + t * 2 * S, out);
          }
        });
    return sel;
  }

  const bool lsh = options.method() == KeySearch::lsh;
  const std::int64_t knn =
      lsh ? std::min<std::int64_t>(S, options.candidates() > 0 ? options.candidates() : 8 * top_k)
          : top_k;
  const int dims = static_cast<int>(E + 1);
  // Random hyperplanes for the LSH codes, shared by keys and queries.
  Tensor planes;
  if (lsh) {
    planes = Tensor::empty({options.bits(), E + 1});
    Gaussian g(options.seed());
    for (std::int64_t i = 0; i < planes.numel(); ++i) planes[i] = static_cast<float>(g.next());
  }
  // x: rows x (E+1) floats -> rows x bits/8 sign codes, projected 1024 rows at a time so the
  // projection buffer stays small whatever the row count.
  const auto sign_codes = [&](const cv::Mat& x) {
    const int bytes = options.bits() / 8;
    cv::Mat codes(x.rows, bytes, CV_8U);
    cv::Mat proj(std::min(x.rows, 1024), options.bits(), CV_32F);
    for (int r0 = 0; r0 < x.rows; r0 += proj.rows) {
      const int n = std::min(proj.rows, x.rows - r0);
      gemm(Trans::no, Trans::yes, n, options.bits(), dims, 1.0f, x.ptr<float>(r0), dims,
           planes.data(), dims, 0.0f, proj.ptr<float>(), options.bits());
      for (int r = 0; r < n; ++r) {
        const float* p = proj.ptr<float>(r);
        std::uint8_t* c = codes.ptr<std::uint8_t>(r0 + r);
        for (int byte = 0; byte < bytes; ++byte) {
          unsigned bits = 0;
          for (int j = 0; j < 8; ++j) bits |= static_cast<unsigned>(p[byte * 8 + j] >= 0) << j;
          c[byte] = static_cast<std::uint8_t>(bits);
        }
      }
    }
    return codes;
  };

  std::vector<float> cscore(static_cast<std::size_t>(slots * knn));
  std::vector<std::int32_t> cidx(static_cast<std::size_t>(slots * knn));
  for (std::int64_t b = 0; b < B; ++b) {
    const float* kb = kd + b * S * E;
    const float* qb = qd + b * L * E;
    // Largest key norm M for the augmentations.
    double max_norm2 = 0;
    std::vector<double> norm2(static_cast<std::size_t>(S));
    for (std::int64_t j = 0; j < S; ++j) {
      double n2 = 0;
      for (std::int64_t e = 0; e < E; ++e) n2 += double(kb[j * E + e]) * kb[j * E + e];
      norm2[static_cast<std::size_t>(j)] = n2;
      max_norm2 = std::max(max_norm2, n2);
    }
    cv::Mat keys(static_cast<int>(S), dims, CV_32F), queries(static_cast<int>(L), dims, CV_32F);
    const double inv_m = max_norm2 > 0 ? 1.0 / std::sqrt(max_norm2) : 0.0;
    for (std::int64_t j = 0; j < S; ++j) {
      float* row = keys.ptr<float>(static_cast<int>(j));
      const double n2 = norm2[static_cast<std::size_t>(j)];
      if (lsh) {  // Simple-LSH: unit-norm-bounded keys plus the completing coordinate
        for (std::int64_t e = 0; e < E; ++e) row[e] = static_cast<float>(kb[j * E + e] * inv_m);
        row[E] = static_cast<float>(std::sqrt(std::max(0.0, 1.0 - n2 * inv_m * inv_m)));
      } else {  // inner product -> L2
        for (std::int64_t e = 0; e < E; ++e) row[e] = kb[j * E + e];
        row[E] = static_cast<float>(std::sqrt(std::max(0.0, max_norm2 - n2)));
      }
    }
    for (std::int64_t i = 0; i < L; ++i) {
      float* row = queries.ptr<float>(static_cast<int>(i));
      double n2 = 0;
      for (std::int64_t e = 0; e < E; ++e) n2 += double(qb[i * E + e]) * qb[i * E + e];
      const double inv_q = lsh && n2 > 0 ? 1.0 / std::sqrt(n2) : 1.0;
      for (std::int64_t e = 0; e < E; ++e) row[e] = static_cast<float>(qb[i * E + e] * inv_q);
      row[E] = 0.0f;
    }
    cv::Mat key_data = lsh ? sign_codes(keys) : keys;
    cv::Mat query_data = lsh ? sign_codes(queries) : queries;
    std::unique_ptr<cv::flann::Index> index;
    try {
      if (lsh) {
        index = std::make_unique<cv::flann::Index>(
            key_data,
            cv::flann::LshIndexParams(options.table_number(), options.key_size(),
                                      options.multi_probe_level()),
            cvflann::FLANN_DIST_HAMMING);
      } else {
        // Unlimited checks visit every leaf, so one tree is enough (FLANN prints a complaint
        // per query otherwise).
        const int trees = options.checks() < 0 ? 1 : options.trees();
        index = std::make_unique<cv::flann::Index>(key_data, cv::flann::KDTreeIndexParams(trees),
                                                   cvflann::FLANN_DIST_L2);
      }
    } catch (const cv::Exception& e) {
      throw ValueError(detail::concat(where, ": FLANN could not build the index: ", e.what()));
    }
    // Outputs per query chunk are allocated here so the parallel searches never allocate.
    const cv::Mat found(static_cast<int>(L), static_cast<int>(knn), CV_32S);
    const cv::Mat dists(static_cast<int>(L), static_cast<int>(knn), lsh ? CV_32S : CV_32F);
    std::vector<char> need_exact(static_cast<std::size_t>(L), 0);
    std::exception_ptr error;
    std::mutex error_mutex;
    const cv::flann::SearchParams params(options.checks() < 0 ? cvflann::FLANN_CHECKS_UNLIMITED
                                                              : options.checks());
    for_thread_ranges(L, [&](std::int64_t t, std::int64_t begin, std::int64_t end) {
      if (begin >= end) return;
      try {
        const cv::Range rows(static_cast<int>(begin), static_cast<int>(end));
        cv::Mat f = found.rowRange(rows), d = dists.rowRange(rows);
        index->knnSearch(query_data.rowRange(rows), f, d, static_cast<int>(knn), params);
        for (std::int64_t i = begin; i < end; ++i) {
          const bool ok =
              rerank_row(qb + i * E, kb, S, E, found.ptr<int>(static_cast<int>(i)), knn, top_k,
                         cscore.data() + t * knn, cidx.data() + t * knn, out + (b * L + i) * top_k);
          if (!ok) need_exact[static_cast<std::size_t>(i)] = 1;
        }
      } catch (...) {
        // Only one thread writes in practice; any failure is reported after the region.
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const cv::Exception& e) {
        throw ValueError(detail::concat(where, ": FLANN search failed: ", e.what()));
      }
    }
    for (std::int64_t i = 0; i < L; ++i) {
      if (need_exact[static_cast<std::size_t>(i)]) {
        exact_rows(qd, kd, L, S, E, top_k, b, i, i + 1, scores.data(), tmp.data(), out);
      }
    }
  }
  return sel;
}

AttentionResult attend_selected(const Tensor& q, const Tensor& k, const Tensor& v,
                                const KeySelection& selection, std::optional<double> scale) {
  const char* where = "attend_selected";
  check_rank(q, 3, "q", where);
  const std::int64_t B = q.dim(0), L = q.dim(1), E = q.dim(2);
  check_rank(k, 3, "k", where);
  check_shape(k, {B, kAny, E}, "k", where);
  const std::int64_t S = k.dim(1);
  check_rank(v, 3, "v", where);
  check_shape(v, {B, S, kAny}, "v", where);
  const std::int64_t Ev = v.dim(2);
  CVATTN_CHECK(selection.shape.size() == 3 && selection.shape[0] == B && selection.shape[1] == L &&
                   selection.shape[2] >= 1,
               ShapeError, where, ": selection expected shape [", B, ", ", L, ", top_k >= 1], got ",
               to_string(selection.shape));
  const std::int64_t kk = selection.shape[2];
  CVATTN_CHECK(static_cast<std::int64_t>(selection.indices.size()) == B * L * kk, ShapeError, where,
               ": selection holds ", selection.indices.size(), " indices, expected ", B * L * kk);
  for (std::size_t i = 0; i < selection.indices.size(); ++i) {
    const std::int32_t j = selection.indices[i];
    CVATTN_CHECK(j >= 0 && j < S, ValueError, where, ": selection index ", j, " at position ", i,
                 " is outside [0, ", S, ")");
  }
  const double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(E));
  CVATTN_CHECK(std::isfinite(s), ValueError, where, ": scale must be finite, got ", s);
  const float sc = static_cast<float>(s);
  AttentionResult result;
  result.output = Tensor::empty({B, L, Ev});
  result.attn_weights = Tensor::empty({B, L, kk});
  const float* qd = q.data();
  const float* kd = k.data();
  const float* vd = v.data();
  float* od = result.output.data();
  float* wd = result.attn_weights.data();
  const std::int32_t* id = selection.indices.data();
  detail::parallel_for(B * L, [&](std::int64_t bl) {
    const std::int64_t b = bl / L;
    float* w = wd + bl * kk;
    const std::int32_t* ix = id + bl * kk;
    detail::gathered_dots(qd + bl * E, kd + b * S * E, E, ix, kk, w);
    detail::softmax_row(w, kk, sc, nullptr, 0, kk);
    detail::gathered_weighted_sum(w, vd + b * S * Ev, Ev, ix, kk, od + bl * Ev);
  });
  return result;
}

AttentionResult sparse_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                 const KeySearchOptions& options, std::optional<double> scale,
                                 KeySelection* selection) {
  const char* where = "sparse_attention";
  CVATTN_CHECK(!scale || (*scale > 0 && std::isfinite(*scale)), ValueError, where,
               ": scale must be positive (keys are selected by q.k), got ", *scale);
  KeySelection sel = select_keys(q, k, options);
  AttentionResult r = attend_selected(q, k, v, sel, scale);
  if (selection) *selection = std::move(sel);
  return r;
}

}  // namespace cvattn::functional

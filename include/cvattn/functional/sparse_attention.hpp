#pragma once
// Sparse attention: local (windowed) attention on feature maps, and attention restricted to the
// top-k keys of each query, found exactly or approximately with OpenCV's FLANN.
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "cvattn/core/options.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"
#include "cvattn/functional/attention.hpp"

namespace cvattn::functional {

// Local attention: query pixel (y, x) attends to the keys in the (2D+1) x (2D+1) window centred
// on it, D = radius:
//   w[n,y,x,s] = softmax_s( scale * sum_c q[n,c,y,x] * k[n,c,y+dy,x+dx] ),  s = (dy+D)*(2D+1) +
//   (dx+D) out[n,c,y,x] = sum_s w[n,y,x,s] * v[n,c,y+dy,x+dx]
// Window positions outside the image are excluded from the softmax (not zero-padded keys, which
// would still take part with score 0): their slot in attn_weights is 0 and the remaining slots
// sum to 1. q, k [N, C, H, W]; v [N, Cv, H, W]; scale defaults to 1/sqrt(C).
// Returns output [N, Cv, H, W] and attn_weights [N, H, W, (2D+1)^2].
[[nodiscard]] CVATTN_EXPORT AttentionResult
local_attention(const Tensor& q, const Tensor& k, const Tensor& v, std::int64_t radius,
                std::optional<double> scale = std::nullopt);

// How select_keys finds each query's top_k keys by inner product q . k.
//   exact:  full scores and a partial selection (ties: lower key index first).
//   kdtree: FLANN randomized kd-trees (cv::flann::KDTreeIndexParams) on the inner-product ->
//           L2 reduction: keys k' = [k, sqrt(M^2 - |k|^2)], queries q' = [q, 0] with M the largest
//           key norm, so |q' - k'|^2 = |q|^2 + M^2 - 2 q.k and the L2-nearest keys are the
//           largest inner products. `checks` bounds the leaves visited (-1: unlimited, exact).
//   lsh:    FLANN multi-probe LSH (cv::flann::LshIndexParams) needs binary codes under Hamming
//           distance. Codes are sign-random-projection bits (SimHash, `bits` Gaussian
//           hyperplanes from `seed`) of the "Simple-LSH" transform keys k'' = [k/M,
//           sqrt(1 - |k/M|^2)], queries q'' = [q/|q|, 0]; the Hamming distance estimates the
//           angle between q'' and k'', and cos(q'', k'') = q.k / (|q| M) is monotone in q.k, so
//           small Hamming distance approximates large inner product. The `candidates` nearest
//           codes are then re-ranked by the exact q.k; a query for which LSH returns fewer than
//           top_k candidates falls back to exact search.
enum class KeySearch { exact, kdtree, lsh };
// "exact", "kdtree", "lsh"; ValueError otherwise.
[[nodiscard]] CVATTN_EXPORT KeySearch parse_key_search(std::string_view word);

struct KeySearchOptions {
  CVATTN_ARG(KeySearch, method) = KeySearch::exact;
  CVATTN_ARG(std::int64_t, top_k) = 32;  // 1 <= top_k <= S
  // kdtree
  CVATTN_ARG(int, trees) = 4;     // randomized trees, [1, 64]
  CVATTN_ARG(int, checks) = 256;  // leaves visited per query; -1 = unlimited
  // lsh
  CVATTN_ARG(int, bits) = 256;               // code length, multiple of 8 in [8, 4096]
  CVATTN_ARG(int, table_number) = 12;        // hash tables, [1, 64]
  CVATTN_ARG(int, key_size) = 16;            // bits per table key, [1, 24] and <= bits
  CVATTN_ARG(int, multi_probe_level) = 2;    // [0, 2]
  CVATTN_ARG(std::int64_t, candidates) = 0;  // Hamming neighbours re-ranked; 0 = 8 * top_k
  CVATTN_ARG(std::uint64_t, seed) = 0;       // random projections (deterministic)
};

// Selected key indices, row-major [B, L, top_k], each row sorted by decreasing q.k (ties:
// lower index first). Every index is valid (in [0, S)) and distinct within its row.
struct KeySelection {
  Shape shape;                        // {B, L, top_k}
  std::vector<std::int32_t> indices;  // B*L*top_k entries
};

// q [B, L, E], k [B, S, E] (S < 2^31).
[[nodiscard]] CVATTN_EXPORT KeySelection select_keys(const Tensor& q, const Tensor& k,
                                                     const KeySearchOptions& options = {});

// Softmax attention over each query's selected keys only:
//   w[b,l,i] = softmax_i(scale * q[b,l] . k[b, idx[b,l,i]]),  out[b,l] = sum_i w[b,l,i] v[b, idx]
// v [B, S, Ev]. Returns output [B, L, Ev] and attn_weights [B, L, top_k], aligned with
// selection.indices. scale defaults to 1/sqrt(E).
[[nodiscard]] CVATTN_EXPORT AttentionResult
attend_selected(const Tensor& q, const Tensor& k, const Tensor& v, const KeySelection& selection,
                std::optional<double> scale = std::nullopt);

// select_keys + attend_selected. scale must be positive (the keys are selected by q.k).
[[nodiscard]] CVATTN_EXPORT AttentionResult sparse_attention(
    const Tensor& q, const Tensor& k, const Tensor& v, const KeySearchOptions& options = {},
    std::optional<double> scale = std::nullopt, KeySelection* selection = nullptr);

}  // namespace cvattn::functional

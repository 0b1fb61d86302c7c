#pragma once
// Private pieces shared by the conv2d kernels (conv.cpp, conv_winograd.cpp).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/functional/conv.hpp"
#include "functional/detail/elementwise_kernels.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/tasks.hpp"

namespace cvattn::functional::detail {

// A validated conv2d call: sizes, hyper-parameters and the output size.
struct ConvGeometry {
  std::int64_t n, cin, h, w;
  std::int64_t cout, kh, kw;
  std::int64_t sh, sw, ph, pw, dh, dw;
  std::int64_t groups, cin_g, cout_g;
  std::int64_t ho, wo;
  [[nodiscard]] std::int64_t k() const { return cin_g * kh * kw; }
  [[nodiscard]] std::int64_t positions() const { return ho * wo; }
};

// A conv2d call's prepared weight (Conv2dWeight, whose parts are made on the first call that
// asks), or none: then each is computed or packed per call.
struct PreparedWeights {
  const Conv2dWeight* weight = nullptr;
  [[nodiscard]] const float* u22() const {  // winograd_weights
    return weight != nullptr ? data_or_null(weight->winograd()) : nullptr;
  }
  [[nodiscard]] const float* u43() const {  // winograd43_weights
    return weight != nullptr ? data_or_null(weight->winograd43()) : nullptr;
  }
  [[nodiscard]] float scale() const {  // winograd_weight_scale, read with u43
    return weight != nullptr ? weight->winograd_scale() : 0.0f;
  }
  // U43 of each (position, group) packed for the GEMM, or null (Conv2dWeight::winograd43_panels).
  [[nodiscard]] const std::vector<cvattn::detail::PackedA>* u43_panels() const {
    return weight != nullptr ? weight->winograd43_panels() : nullptr;
  }
  // Group `group`'s [Cout_g, K] weight packed for the GEMM (im2col and 1x1 paths) in the form
  // its product with `cols` columns takes (cvattn::detail::sgemm_swaps).
  [[nodiscard]] const cvattn::detail::PackedA* gemm_group(std::int64_t group, std::int64_t cout_g,
                                                          std::int64_t cols, std::int64_t k) const {
    const auto* gemm = weight != nullptr
                           ? weight->gemm_panels(cvattn::detail::sgemm_swaps(cout_g, cols, k))
                           : nullptr;
    return gemm != nullptr && static_cast<std::size_t>(group) < gemm->size()
               ? &(*gemm)[static_cast<std::size_t>(group)]
               : nullptr;
  }

 private:
  static const float* data_or_null(const Tensor& t) { return t.defined() ? t.data() : nullptr; }
};

// Items per chunk when `count` independent jobs of `items` items each are cut into chunks of at
// most `cap` items: smaller (down to `min_chunk`) when that is needed to give every thread
// kTasksPerThread tasks, below `min_chunk` only when there would otherwise be fewer tasks than
// threads (a 7x7 plane of one image: the other threads would idle), and a multiple of `align`
// unless it covers everything.
inline std::int64_t chunk_size(std::int64_t items, std::int64_t cap, std::int64_t count,
                               std::int64_t min_chunk, std::int64_t align) {
  const std::int64_t threads = cvattn::detail::max_threads();
  std::int64_t chunk = std::max<std::int64_t>(1, std::min(cap, items));
  const std::int64_t wanted = kTasksPerThread * threads;
  if (threads > 1 && count * ceil_div(items, chunk) < wanted) {
    const std::int64_t per_job = ceil_div(wanted, std::max<std::int64_t>(count, 1));
    chunk = std::max(std::min(chunk, min_chunk), ceil_div(items, per_job));
    if (count * ceil_div(items, chunk) < threads) {
      chunk = ceil_div(items, ceil_div(threads, std::max<std::int64_t>(count, 1)));
    }
  }
  if (chunk < items) chunk = std::min(items, ceil_div(chunk, align) * align);
  return chunk;
}

// out[r, 0:cols] = bias[r] (0 without bias) for rows r with row stride `stride` (the
// dispatched fill_rows kernel).
inline void fill_bias(float* out, std::int64_t rows, std::int64_t cols, std::int64_t stride,
                      const float* bias) {
  cvattn::detail::fill_rows(out, rows, cols, stride, bias);
}

// out[rows, cols] (row stride ldo) += a[rows, k] (dense) * b[k, cols] (row stride ldb), by
// detail::sgemm; `packed` is a packed copy of a, if any.
void gemm_accumulate(const float* a, std::int64_t rows, std::int64_t k, const float* b,
                     std::int64_t ldb, std::int64_t cols, float* out, std::int64_t ldo,
                     const cvattn::detail::PackedA* packed = nullptr);

// conv2d(input, weight, bias, options) (rank-4 input) written to `out`, which holds the
// [N, Cout, Ho, Wo] floats conv2d would return: lets a module put a conv's result in scratch.
// prepared: what Conv2dWeight prepared of `weight` (transforms, packed copies), or none.
// act: applied to each block of output right after the block is written (conv2d's fused
// epilogue), so the values equal activation_ over the whole output afterwards.
void conv2d_into(const Tensor& input, const Tensor& weight, const Tensor& bias,
                 const Conv2dOptions& options, float* out, const PreparedWeights& prepared = {},
                 ActLayer act = ActLayer::identity);

// The epilogue: act in place on rows [0, rows) x columns [0, cols) of a block with row stride
// ld (nothing for identity).
void act_block(ActLayer act, float* out, std::int64_t rows, std::int64_t cols, std::int64_t ld);

// 3x3, stride 1, dilation 1 by Winograd (conv_winograd.cpp): F(4x4, 3x3) when
// winograd43_pays(g) and max |input| * winograd_weight_scale <= kWinograd43Bound, else
// F(2x2, 3x3).
void conv_winograd_3x3(const ConvGeometry& g, const float* in, const float* wt, const float* bias,
                       float* out, const PreparedWeights& prepared = {},
                       ActLayer act = ActLayer::identity);
// The transform U[16][Cout][Cin_g] of the 3x3 kernels wt for F(2x2, 3x3), and U[36][Cout][Cin_g]
// for F(4x4, 3x3) (only g.cout and g.cin_g are read).
void winograd_weights(const ConvGeometry& g, const float* wt, float* u);
void winograd43_weights(const ConvGeometry& g, const float* wt, float* u);
// max over output channels o of |w_o|_2 * sqrt(Cin_g) (infinity when not finite). F(4x4, 3x3)'s
// largest error over an output measured 2.5e-7 * max |x| * this on random data, against the
// direct sum in double (F(2x2, 3x3): 10x less).
[[nodiscard]] float winograd_weight_scale(const ConvGeometry& g, const float* wt);
// Whether the output size leaves F(4x4, 3x3) at most 3/4 of F(2x2, 3x3)'s products.
[[nodiscard]] bool winograd43_pays(const ConvGeometry& g);
// F(4x4, 3x3) is used up to this bound on max |x| * winograd_weight_scale: an expected largest
// error of 2.5e-5, a quarter of the 1e-4 bar.
inline constexpr float kWinograd43Bound = 100.0f;

// conv2d's Winograd thresholds: at least this many input and output channels per group and
// 2x2 output tiles.
inline constexpr std::int64_t kWinogradMinChannels = 8;
inline constexpr std::int64_t kWinogradMinTiles = 24;
// Largest dilation run as polyphase sub-images (row pointers live in fixed arrays).
inline constexpr std::int64_t kMaxPolyphase = 16;

// A stride-1 3x3 conv with dilation d and padding d reads, for output pixel (q*d + a, r*d + b),
// only input pixels with the same residues (a, b) mod d, at rows q-1..q+1 and columns r-1..r+1 of
// that sub-image. So it equals a plain 3x3 conv with padding 1 over each of the d*d sub-images;
// those go to conv2d as one batch of N*d*d images, where its Winograd path applies (about 1.6x
// faster than im2col at SelectiveKernel's shapes). Sub-images are zero-extended to
// ceil(H/d) x ceil(W/d): the extra row/column stands where the original conv reads padding, so
// valid outputs are exact. polyphase_kernel: the kernel, stride, dilation, padding and channels
// qualify (what Conv2dWeight prepares Winograd transforms for, since the sub-images' convs use
// them); use_polyphase: also the input is large enough for conv2d to take Winograd on the
// sub-images (conv_dilated.cpp).
[[nodiscard]] bool polyphase_kernel(const ConvGeometry& g);
[[nodiscard]] bool use_polyphase(const ConvGeometry& g);
void conv_polyphase(const ConvGeometry& g, const Tensor& input, const Tensor& weight,
                    const Tensor& bias, float* out, const PreparedWeights& prepared = {},
                    ActLayer act = ActLayer::identity);
// Sub-image rows of a polyphase split, d <= kMaxPolyphase (SIMD for d = 2..4). deinterleave_rows:
// for each of `rows` rows (src + q * src_ld, w floats), dst[b][q * dst_ld + r] = src[r*d + b] for
// b < d and r < ceil(w / d), 0 where r*d + b >= w. interleave_rows, the inverse:
// dst[q * dst_ld + r*d + b] = src[b][q * src_ld + r] for r*d + b < w.
void deinterleave_rows(const float* src, std::int64_t src_ld, std::int64_t rows, std::int64_t w,
                       std::int64_t d, float* const* dst, std::int64_t dst_ld);
void interleave_rows(const float* const* src, std::int64_t src_ld, std::int64_t rows,
                     std::int64_t w, std::int64_t d, float* dst, std::int64_t dst_ld);

}  // namespace cvattn::functional::detail

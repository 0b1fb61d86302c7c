#pragma once
// The tile transforms of conv2d's Winograd F(4x4, 3x3) path (functional/conv_winograd.cpp) as
// runtime-dispatched Highway kernels (bodies in winograd_kernels-inl.h, reference twin in
// functional/reference/winograd_kernels.hpp), and the input bound that decides whether that
// path is accurate enough. Private to cvattn.
//
// F(4x4, 3x3) interpolates at the points 0, 1, -1, 1/2, -2 and infinity: the pairs p, 1/p keep
// the transforms' entries small (2.5 at most in B, 8 in A), and its float error is 2-3x lower
// than with 0, +-1, +-2 (docs/functional.md). All entries are binary fractions, so the
// transforms round only in their sums.
#include <cstdint>

namespace cvattn::functional::detail {

// Vectors of at most this many floats; the row buffers below leave room for one of them.
inline constexpr std::int64_t kWinogradLanes = 16;

// Floats in each padded input row and each transformed row of a tile row of tw tiles: the 4 tw
// + 2 columns its tiles read, rounded up so that whole-vector loads stay inside.
[[nodiscard]] inline std::int64_t winograd43_row_floats(std::int64_t tw) {
  return 4 * ((tw + kWinogradLanes - 1) / kWinogradLanes) * kWinogradLanes + 2 * kWinogradLanes;
}

// V = B^T d B for the tw tiles of one channel's tile row. rows[r] (r < 6) is row 4 ty + r of
// the zero-padded plane, from padded column 0, readable (and zero past the data) for
// winograd43_row_floats(tw) floats; tile tx covers its columns [4 tx, 4 tx + 6). t is scratch of
// 6 x winograd43_row_floats(tw) floats. Writes v[xi * step + tx] for the 36 positions
// xi = 6 i + j (row i, column j of the transformed tile) and tx < tw, and whole vectors: up to
// kWinogradLanes - 1 floats past each tile row may be overwritten (callers write the tile rows in
// order and leave that much slack after each position's plane).
void winograd43_input(const float* const* rows, std::int64_t tw, float* t, float* v,
                      std::int64_t step);

// Y = A^T M A + bias for tw tiles: m[xi * step + tx] holds position xi of tile tx, readable
// (any finite values) for kWinogradLanes - 1 floats past tw. Writes the
// first `rows` (<= 4) output rows of the tiles, out[k * ld + c] for k < rows and c < wo (tile tx
// gives columns [4 tx, 4 tx + 4); wo <= 4 tw), nothing else.
void winograd43_output(const float* m, std::int64_t step, std::int64_t tw, float bias, float* out,
                       std::int64_t ld, std::int64_t rows, std::int64_t wo);

// U = G g G^T, the F(4x4, 3x3) weight transform, for `count` 3x3 kernels: kernel c is
// k[9 c .. 9 c + 9), row-major. Writes u[xi * plane + c] for the 36 positions xi = 6 i + j and
// c < count, nothing else. G's rows, for the points above: [1, 0, 0], [1/3, 1/3, 1/3],
// [-1/3, 1/3, -1/3], [-16/15, -8/15, -4/15], [1/15, -2/15, 4/15], [0, 0, 1].
void winograd43_weights_rows(const float* k, std::int64_t count, float* u, std::int64_t plane);

// Copies `rows` rows of `cols` floats (src rows src_ld floats apart, dst rows dst_ld apart) and
// returns max |x| over what it copied (+infinity if any x is NaN or infinite): the F(4x4, 3x3)
// path's input rows, bounded as they are copied instead of in a pass of its own over the input.
[[nodiscard]] float winograd_copy_rows(const float* src, std::int64_t src_ld, std::int64_t rows,
                                       std::int64_t cols, float* dst, std::int64_t dst_ld);

}  // namespace cvattn::functional::detail

#pragma once
// The tensor operations a forward needs, with PyTorch's semantics: broadcasting arithmetic,
// cat, permute / transpose, reshape / flatten, narrow / select / slice, mean / amax over dims
// and F.pad. Dims may be negative (counted from the end); errors name the op and the argument.
//
// reshape and flatten return a tensor sharing x's storage (as Tensor::reshape and
// torch.reshape on a contiguous tensor); every other op returns a fresh tensor.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

// F.pad's mode.
enum class PadMode { constant, reflect, replicate, circular };
// "constant" / "reflect" / "replicate" / "circular"; ValueError on any other word.
[[nodiscard]] CVATTN_EXPORT PadMode parse_pad_mode(const std::string& word);
[[nodiscard]] CVATTN_EXPORT const char* to_string(PadMode mode);

}  // namespace cvattn

namespace cvattn::functional {

// a op b elementwise with NumPy broadcasting (shapes right-aligned, each dim equal or 1); the
// result has the broadcast shape. Division follows IEEE (x / 0 is +-inf, 0 / 0 NaN).
[[nodiscard]] CVATTN_EXPORT Tensor add(const Tensor& a, const Tensor& b);
[[nodiscard]] CVATTN_EXPORT Tensor sub(const Tensor& a, const Tensor& b);
[[nodiscard]] CVATTN_EXPORT Tensor mul(const Tensor& a, const Tensor& b);
[[nodiscard]] CVATTN_EXPORT Tensor div(const Tensor& a, const Tensor& b);

// torch.cat: tensors of equal rank whose shapes agree except along dim, joined along dim.
[[nodiscard]] CVATTN_EXPORT Tensor cat(const std::vector<Tensor>& tensors, int dim);

// torch.permute: output dim i is input dim dims[i] (a permutation of 0..rank-1).
[[nodiscard]] CVATTN_EXPORT Tensor permute(const Tensor& x, const std::vector<int>& dims);
// torch.transpose: dims dim0 and dim1 swapped.
[[nodiscard]] CVATTN_EXPORT Tensor transpose(const Tensor& x, int dim0, int dim1);

// torch.reshape: one entry may be -1 (inferred). Shares x's storage.
[[nodiscard]] CVATTN_EXPORT Tensor reshape(const Tensor& x, const Shape& shape);
// torch.flatten: dims start_dim..end_dim merged into one. Shares x's storage.
[[nodiscard]] CVATTN_EXPORT Tensor flatten(const Tensor& x, int start_dim = 0, int end_dim = -1);

// torch.narrow: `length` entries of dim from `start` (negative start counts from the end).
[[nodiscard]] CVATTN_EXPORT Tensor narrow(const Tensor& x, int dim, std::int64_t start,
                                          std::int64_t length);
// torch.select / x[..., index, ...]: entry `index` (negative from the end) of dim, that dim
// removed.
[[nodiscard]] CVATTN_EXPORT Tensor select(const Tensor& x, int dim, std::int64_t index);
// x[start:end:step] along dim with Python's rules: negative start / end count from the end,
// out-of-range bounds are clamped (an empty result is allowed), step >= 1.
inline constexpr std::int64_t kSliceEnd = std::numeric_limits<std::int64_t>::max();
[[nodiscard]] CVATTN_EXPORT Tensor slice(const Tensor& x, int dim, std::int64_t start = 0,
                                         std::int64_t end = kSliceEnd, std::int64_t step = 1);

// torch.mean / torch.amax over `dims` (each once; empty means every dim), removed from the
// shape unless keepdim. amax propagates NaN; amax over an empty dim is a ValueError (as in
// PyTorch), mean of nothing is NaN.
[[nodiscard]] CVATTN_EXPORT Tensor mean(const Tensor& x, const std::vector<int>& dims,
                                        bool keepdim = false);
[[nodiscard]] CVATTN_EXPORT Tensor amax(const Tensor& x, const std::vector<int>& dims,
                                        bool keepdim = false);

// F.pad: pads = (last_left, last_right, second_last_left, second_last_right, ...), at most
// two per dim. constant pads any rank, negative pads crop; reflect (pad < size), replicate
// and circular (pad <= size) pad the last 1-3 dims of a tensor with one or two leading dims,
// with non-negative pads.
[[nodiscard]] CVATTN_EXPORT Tensor pad(const Tensor& x, const std::vector<std::int64_t>& pads,
                                       PadMode mode = PadMode::constant, float value = 0.0f);

}  // namespace cvattn::functional

#include "cvattn/functional/linear.hpp"

#include <algorithm>

#include "cvattn/core/error.hpp"
#include "functional/detail/gemm.hpp"
#include "functional/detail/tasks.hpp"

namespace cvattn::functional {
namespace {

// Below this many multiply-adds a second thread costs more than it saves.
constexpr std::int64_t kParallelWork = std::int64_t{1} << 16;
// Rows (or output features) per task at least, so that each GEMM keeps its register blocking.
constexpr std::int64_t kMinBlock = 16;

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  constexpr const char* kWhere = "linear";
  check_defined(x, "input", kWhere);
  check_rank(weight, 2, "weight", kWhere);
  const std::int64_t out_features = weight.dim(0), in_features = weight.dim(1);
  CVATTN_CHECK(x.rank() >= 1 && x.dim(-1) == in_features, ShapeError, kWhere,
               ": tensor 'input' expected last dimension ", in_features, " (weight ",
               to_string(weight.shape()), "), got ", to_string(x.shape()));
  if (bias.defined()) check_shape(bias, {out_features}, "bias", kWhere);
  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  Tensor y = Tensor::empty(out_shape);
  const std::int64_t rows = in_features
                                ? x.numel() / in_features
                                : checked_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  if (y.numel() == 0) return y;
  const float* xd = x.data();
  const float* wd = weight.data();
  const float* bd = bias.defined() ? bias.data() : nullptr;
  float* yd = y.data();
  // Split the rows when there are many, else the output features (a batch of one vector).
  const std::int64_t threads = cvattn::detail::max_threads();
  const bool parallel = threads > 1 && rows * in_features * out_features >= kParallelWork;
  const bool split_rows = rows >= kMinBlock * threads || out_features < kMinBlock * threads;
  const std::int64_t extent = split_rows ? rows : out_features;
  const std::int64_t tasks =
      parallel ? std::min(threads, std::max<std::int64_t>(1, extent / kMinBlock)) : 1;
  detail::guarded_parallel_for(tasks, [&](std::int64_t t) {
    const std::int64_t begin = extent * t / tasks, end = extent * (t + 1) / tasks;
    const std::int64_t r0 = split_rows ? begin : 0, r1 = split_rows ? end : rows;
    const std::int64_t o0 = split_rows ? 0 : begin, o1 = split_rows ? out_features : end;
    // The bias is written first and the product accumulated onto it (beta 1): one pass over y
    // instead of the GEMM's zeroing pass plus a bias pass.
    if (bd != nullptr) {
      for (std::int64_t r = r0; r < r1; ++r)
        std::copy(bd + o0, bd + o1, yd + r * out_features + o0);
    }
    cvattn::detail::sgemm(cvattn::detail::Trans::no, cvattn::detail::Trans::yes, r1 - r0, o1 - o0,
                          in_features, 1.0f, xd + r0 * in_features, in_features,
                          wd + o0 * in_features, in_features, bd != nullptr ? 1.0f : 0.0f,
                          yd + r0 * out_features + o0, out_features);
  });
  return y;
}

}  // namespace cvattn::functional

#pragma once
// The passes of functional::softmax / log_softmax along any axis as runtime-dispatched Highway
// kernels (bodies in softmax_axis_kernels-inl.h, reference twin in
// functional/reference/softmax_axis.hpp). e^x to about 1 ulp (ShortExp, vector_helpers-inl.h),
// unlike the attention softmax's fast exp2 (softmax.hpp): these are the public ops, compared with
// PyTorch. Shifted values below -87 give exactly 0 (PyTorch: a float below 1.7e-38).
#include <cstdint>

namespace cvattn::detail {

// out = softmax(x) (log: log_softmax(x)) over x[0..n), n >= 1, out != x: the maximum m, e^(x - m)
// and its sum s (in vector lanes), then e / s (log: x - m - log s), in one call per row.
void softmax_row_exact(const float* x, float* out, std::int64_t n, bool log);

// The column form, for a reduced axis that is not the last: e[j] = e^(x[j] - m[j]),
// out[j] = e[j] or x[j] - m[j], s[j] += e[j], for j < n.
void exp_shift_cols(const float* x, const float* m, float* out, float* s, std::int64_t n,
                    bool store_exp);

// m[j] = max(m[j], x[j]) for j < n (which operand a NaN pair keeps is unspecified: a NaN in
// the slice makes its sum NaN either way).
void max_cols(float* m, const float* x, std::int64_t n);

// x[j] = x[j] * a[j] (multiply) or x[j] - a[j] (!multiply) for j < n.
void combine_cols(float* x, const float* a, std::int64_t n, bool multiply);

}  // namespace cvattn::detail

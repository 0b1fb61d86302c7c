#include "cvattn/functional/tensor_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/parallel_for.hpp"
#include "cvattn/core/error.hpp"
#include "functional/detail/broadcast.hpp"
#include "functional/detail/elementwise_kernels.hpp"
#include "functional/detail/grain.hpp"
#include "functional/detail/reduce.hpp"
#include "functional/detail/tasks.hpp"
#include "functional/detail/transpose.hpp"

namespace cvattn {

PadMode parse_pad_mode(const std::string& word) {
  if (word == "constant") return PadMode::constant;
  if (word == "reflect") return PadMode::reflect;
  if (word == "replicate") return PadMode::replicate;
  if (word == "circular") return PadMode::circular;
  throw ValueError("pad: unknown mode '" + word +
                   "' (expected constant, reflect, replicate or circular)");
}

const char* to_string(PadMode mode) {
  switch (mode) {
    case PadMode::constant:
      return "constant";
    case PadMode::reflect:
      return "reflect";
    case PadMode::replicate:
      return "replicate";
    case PadMode::circular:
      return "circular";
  }
  return "unknown";
}

}  // namespace cvattn

namespace cvattn::functional {
namespace {

using Index = std::int64_t;

// Elements per parallel task of the copying and elementwise ops.
constexpr Index kChunk = Index{1} << 15;

// dim in [-rank, rank) -> [0, rank); ValueError naming the op and the argument otherwise.
int wrap_dim(int dim, int rank, const char* where, const char* arg, const Tensor& x) {
  CVATTN_CHECK(rank > 0 && dim >= -rank && dim < rank, ValueError, where, ": ", arg, " ", dim,
               " out of range for tensor 'input' ", to_string(x.shape()), " (expected [", -rank,
               ", ", rank - 1, "])");
  return dim < 0 ? dim + rank : dim;
}

// "[5, -1]": the shape as the caller wrote it (to_string prints -1 as '*').
std::string requested(const Shape& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

Shape strides_of(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// ---------------------------------------------------------------------------------------------
// Broadcasting binary ops.

using cvattn::detail::BinaryOp;

// The rows run the dispatched kernel of detail/elementwise_kernels.hpp (reference twin:
// functional/reference/elementwise.hpp).
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const char* where) {
  check_defined(a, "input", where);
  check_defined(b, "other", where);
  Shape out_shape;
  CVATTN_CHECK(cvattn::detail::broadcast_shapes({a.shape(), b.shape()}, out_shape), ShapeError,
               where, ": tensors 'input' ", to_string(a.shape()), " and 'other' ",
               to_string(b.shape()), " do not broadcast (each dim must be equal or 1)");
  Tensor y = Tensor::empty(out_shape);
  const Index total = y.numel();
  if (total == 0) return y;
  // Per output dim: size and the two operands' strides (0 where broadcast), then adjacent dims
  // merged wherever both operands are contiguous across them, so the innermost loop is long.
  const std::size_t rank = out_shape.size();
  std::vector<Index> size, sa, sb;
  {
    const Shape as = strides_of(a.shape()), bs = strides_of(b.shape());
    const std::size_t pa = rank - a.shape().size(), pb = rank - b.shape().size();
    for (std::size_t i = 0; i < rank; ++i) {
      const Index n = out_shape[i];
      if (n == 1) continue;
      const Index s1 = i >= pa && a.shape()[i - pa] != 1 ? as[i - pa] : 0;
      const Index s2 = i >= pb && b.shape()[i - pb] != 1 ? bs[i - pb] : 0;
      if (!size.empty() && sa.back() == s1 * n && sb.back() == s2 * n) {
        size.back() *= n;
        sa.back() = s1;
        sb.back() = s2;
      } else {
        size.push_back(n);
        sa.push_back(s1);
        sb.push_back(s2);
      }
    }
    if (size.empty()) {
      size = {1};
      sa = {0};
      sb = {0};
    }
  }
  const Index inner = size.back();
  const Index ia = sa.back(), ib = sb.back();
  const Index rows = total / inner;
  const std::size_t outer_dims = size.size() - 1;
  const float* pa = a.data();
  const float* pb = b.data();
  float* py = y.data();
  if (inner >= kChunk || rows == 1) {
    // Long rows: split each row into chunks.
    const Index chunks = detail::ceil_div(inner, kChunk);
    cvattn::detail::parallel_for(rows * chunks, [&](Index t) {
      Index r = t / chunks, off_a = 0, off_b = 0;
      for (std::size_t d = outer_dims; d-- > 0;) {
        const Index idx = r % size[d];
        r /= size[d];
        off_a += idx * sa[d];
        off_b += idx * sb[d];
      }
      const Index c0 = (t % chunks) * kChunk;
      const Index n = std::min(kChunk, inner - c0);
      cvattn::detail::binary_row(op, pa + off_a + c0 * ia, ia, pb + off_b + c0 * ib, ib,
                                 py + (t / chunks) * inner + c0, n);
    });
    return y;
  }
  const Index rows_per_task = std::max<Index>(1, kChunk / inner);
  cvattn::detail::parallel_for(detail::ceil_div(rows, rows_per_task), [&](Index t) {
    const Index r0 = t * rows_per_task;
    const Index r1 = std::min(rows, r0 + rows_per_task);
    // Multi-index of the first row, then advanced like an odometer; the rows' offsets go to the
    // kernel in blocks, one dispatch per block.
    Index idx[Tensor::kMaxRank] = {};
    Index off_a = 0, off_b = 0;
    {
      Index r = r0;
      for (std::size_t d = outer_dims; d-- > 0;) {
        idx[d] = r % size[d];
        r /= size[d];
        off_a += idx[d] * sa[d];
        off_b += idx[d] * sb[d];
      }
    }
    constexpr Index kBlock = 64;
    Index block_a[kBlock], block_b[kBlock];
    for (Index r = r0; r < r1; r += kBlock) {
      const Index count = std::min(kBlock, r1 - r);
      if (outer_dims == 1) {
        // One outer dim (a [rows, n] op a [n] bias, say): offsets are multiples of its strides;
        // the general odometer below cost ~8% of a token-bias add.
        const Index s1 = sa[0], s2 = sb[0];
        for (Index k = 0; k < count; ++k) {
          block_a[k] = (r + k) * s1;
          block_b[k] = (r + k) * s2;
        }
        cvattn::detail::binary_rows(op, pa, block_a, ia, pb, block_b, ib, py + r * inner, inner,
                                    count);
        continue;
      }
      for (Index k = 0; k < count; ++k) {
        block_a[k] = off_a;
        block_b[k] = off_b;
        for (std::size_t d = outer_dims; d-- > 0;) {
          off_a += sa[d];
          off_b += sb[d];
          if (++idx[d] < size[d]) break;
          off_a -= sa[d] * size[d];
          off_b -= sb[d] * size[d];
          idx[d] = 0;
        }
      }
      cvattn::detail::binary_rows(op, pa, block_a, ia, pb, block_b, ib, py + r * inner, inner,
                                  count);
    }
  });
  return y;
}

// ---------------------------------------------------------------------------------------------
// Strided copies: out (contiguous, shape `shape`) [i] = src[sum idx_d * stride_d].

void strided_copy(const float* src, const Shape& shape, const Shape& stride, float* dst) {
  // Merge dims that are contiguous in the source as well, so that the inner loop is long.
  std::vector<Index> size, st;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (!size.empty() && st.back() == stride[i] * shape[i]) {
      size.back() *= shape[i];
      st.back() = stride[i];
    } else {
      size.push_back(shape[i]);
      st.push_back(stride[i]);
    }
  }
  if (size.empty()) {
    size = {1};
    st = {1};
  }
  Index total = 1;
  for (const auto n : size) total *= n;
  if (total == 0) return;
  const std::size_t nd = size.size();
  // A batch of matrix transposes (NCHW -> NHWC and the like): the inner two dims are the
  // source's contiguous columns and its rows, so the register-blocked transpose applies. Each
  // task is one matrix, so there must be a matrix for every thread.
  if (nd >= 2 && st[nd - 2] == 1 && st[nd - 1] == size[nd - 2]) {
    const Index cols = size[nd - 2], mat_rows = size[nd - 1], plane = cols * mat_rows;
    const Index batches = total / plane;
    if (batches >= cvattn::detail::max_threads() && plane >= 64) {
      cvattn::detail::parallel_for(batches, [&](Index b) {
        Index r = b, off = 0;
        for (std::size_t d = nd - 2; d-- > 0;) {
          off += (r % size[d]) * st[d];
          r /= size[d];
        }
        cvattn::detail::transpose(src + off, dst + b * plane, mat_rows, cols);
      });
      return;
    }
  }
  const Index inner = size.back();
  const Index is = st.back();
  const Index rows = total / inner;
  const std::size_t outer_dims = size.size() - 1;
  const Index rows_per_task = std::max<Index>(1, kChunk / inner);
  cvattn::detail::parallel_for(detail::ceil_div(rows, rows_per_task), [&](Index t) {
    const Index r0 = t * rows_per_task;
    const Index r1 = std::min(rows, r0 + rows_per_task);
    Index idx[Tensor::kMaxRank] = {};
    Index off = 0;
    {
      Index r = r0;
      for (std::size_t d = outer_dims; d-- > 0;) {
        idx[d] = r % size[d];
        r /= size[d];
        off += idx[d] * st[d];
      }
    }
    for (Index r = r0; r < r1; ++r) {
      float* __restrict o = dst + r * inner;
      const float* __restrict s = src + off;
      if (is == 1) {
        std::memcpy(o, s, static_cast<std::size_t>(inner) * sizeof(float));
      } else {
        for (Index i = 0; i < inner; ++i) o[i] = s[i * is];
      }
      for (std::size_t d = outer_dims; d-- > 0;) {
        off += st[d];
        if (++idx[d] < size[d]) break;
        off -= st[d] * size[d];
        idx[d] = 0;
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Reductions.

struct ReduceDims {
  std::vector<bool> reduced;
  Shape out_shape;  // keepdim applied
  Index count = 1;  // elements reduced per output
};

ReduceDims reduce_dims(const Tensor& x, const std::vector<int>& dims, bool keepdim,
                       const char* where) {
  check_defined(x, "input", where);
  const int rank = x.rank();
  ReduceDims r;
  r.reduced.assign(static_cast<std::size_t>(rank), dims.empty());
  for (const int d : dims) {
    const int k = wrap_dim(d, rank, where, "dim", x);
    CVATTN_CHECK(!r.reduced[static_cast<std::size_t>(k)], ValueError, where, ": dim ", k,
                 " appears more than once in dims");
    r.reduced[static_cast<std::size_t>(k)] = true;
  }
  for (int i = 0; i < rank; ++i) {
    const auto n = x.shape()[static_cast<std::size_t>(i)];
    if (r.reduced[static_cast<std::size_t>(i)]) {
      r.count *= n;
      if (keepdim) r.out_shape.push_back(1);
    } else {
      r.out_shape.push_back(n);
    }
  }
  return r;
}

inline float max_nan(float a, float b) { return (a > b || a != a) ? a : b; }

// NaN-propagating maximum of n contiguous floats (n > 0), 16 lanes at a time.
float row_max(const float* x, Index n) {
  constexpr Index kLanes = 16;
  if (n < kLanes) {
    float m = x[0];
    for (Index i = 1; i < n; ++i) m = max_nan(m, x[i]);
    return m;
  }
  float lanes[kLanes];
  std::copy(x, x + kLanes, lanes);
  const Index full = n / kLanes * kLanes;
  for (Index i = kLanes; i < full; i += kLanes) {
    for (Index l = 0; l < kLanes; ++l) lanes[l] = max_nan(lanes[l], x[i + l]);
  }
  float m = lanes[0];
  for (Index l = 1; l < kLanes; ++l) m = max_nan(m, lanes[l]);
  for (Index i = full; i < n; ++i) m = max_nan(m, x[i]);
  return m;
}

// dst[i] = max or mean over k < r of base[k * stride + i], for i < n <= kCols.
template <bool kMax, Index kCols>
void reduce_columns(const float* base, Index stride, Index r, Index n, float* dst, double inv) {
  if constexpr (kMax) {
    float acc[kCols];
    std::copy(base, base + n, acc);
    for (Index k = 1; k < r; ++k) {
      const float* row = base + k * stride;
      for (Index i = 0; i < n; ++i) acc[i] = max_nan(acc[i], row[i]);
    }
    std::copy(acc, acc + n, dst);
  } else {
    // Float sums over blocks of rows (the dispatched column_sums), the blocks added in double.
    double acc[kCols] = {};
    cvattn::detail::column_sums(base, stride, r, n, acc);
    for (Index i = 0; i < n; ++i) dst[i] = static_cast<float>(acc[i] * inv);
  }
}

template <bool kMax>
Tensor reduce(const Tensor& x, const std::vector<int>& dims, bool keepdim, const char* where) {
  const ReduceDims rd = reduce_dims(x, dims, keepdim, where);
  if constexpr (kMax) {
    CVATTN_CHECK(rd.count > 0, ValueError, where,
                 ": cannot reduce over a dim of size 0 of tensor 'input' ", to_string(x.shape()));
  }
  Tensor y = Tensor::empty(rd.out_shape);
  const Index outputs = y.numel();
  if (outputs == 0) return y;
  if (rd.count == 0) {
    y.fill(std::numeric_limits<float>::quiet_NaN());  // mean of nothing
    return y;
  }
  // [outer, R, inner] when the reduced dims form one block; otherwise the reduced dims are
  // first moved to the end by a copy.
  const int rank = x.rank();
  int first = rank, last = -1;
  for (int i = 0; i < rank; ++i) {
    if (rd.reduced[static_cast<std::size_t>(i)] && x.shape()[static_cast<std::size_t>(i)] != 1) {
      first = std::min(first, i);
      last = i;
    }
  }
  bool block = true;
  for (int i = first; i <= last; ++i) {
    if (!rd.reduced[static_cast<std::size_t>(i)] && x.shape()[static_cast<std::size_t>(i)] != 1)
      block = false;
  }
  Tensor src = x;
  Index inner = 1;
  if (!block) {
    std::vector<int> order;
    for (int i = 0; i < rank; ++i)
      if (!rd.reduced[static_cast<std::size_t>(i)]) order.push_back(i);
    for (int i = 0; i < rank; ++i)
      if (rd.reduced[static_cast<std::size_t>(i)]) order.push_back(i);
    src = permute(x, order);
  } else {
    for (int i = last + 1; i < rank; ++i) inner *= x.shape()[static_cast<std::size_t>(i)];
  }
  const Index r = rd.count;
  const Index outer = outputs / inner;
  const float* in = src.data();
  float* out = y.data();
  const double inv = 1.0 / static_cast<double>(r);
  if (inner == 1) {
    const Index per_task = std::max<Index>(1, kChunk / r);
    cvattn::detail::parallel_for(detail::ceil_div(outer, per_task), [&](Index t) {
      const Index end = std::min(outer, (t + 1) * per_task);
      for (Index o = t * per_task; o < end; ++o) {
        const float* row = in + o * r;
        if constexpr (kMax) {
          out[o] = row_max(row, r);
        } else {
          out[o] = cvattn::detail::plane_mean(row, r);
        }
      }
    });
    return y;
  }
  // Columns: accumulate the R rows of `inner` contiguous values, a block of columns at a time.
  constexpr Index kCols = 256;
  const Index col_blocks = detail::ceil_div(inner, kCols);
  detail::parallel_ranges(
      outer * col_blocks, detail::items_per_task(kCols * r), [&](Index t0, Index t1) {
        for (Index t = t0; t < t1; ++t) {
          const Index o = t / col_blocks;
          const Index c0 = (t % col_blocks) * kCols;
          reduce_columns<kMax, kCols>(in + o * r * inner + c0, inner, r,
                                      std::min(kCols, inner - c0), out + o * inner + c0, inv);
        }
      });
  return y;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::add, a, b, "add"); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::sub, a, b, "sub"); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::mul, a, b, "mul"); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::div, a, b, "div"); }

Tensor cat(const std::vector<Tensor>& tensors, int dim) {
  constexpr const char* kWhere = "cat";
  CVATTN_CHECK(!tensors.empty(), ValueError, kWhere, ": expected a non-empty list of tensors");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    CVATTN_CHECK(tensors[i].defined(), ShapeError, kWhere, ": tensor ", i, " is undefined");
  }
  const Tensor& first = tensors.front();
  const int rank = first.rank();
  const int d = wrap_dim(dim, rank, kWhere, "dim", first);
  Shape out_shape = first.shape();
  out_shape[static_cast<std::size_t>(d)] = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Shape& s = tensors[i].shape();
    bool ok = static_cast<int>(s.size()) == rank;
    for (int k = 0; ok && k < rank; ++k) {
      ok = k == d || s[static_cast<std::size_t>(k)] == first.shape()[static_cast<std::size_t>(k)];
    }
    CVATTN_CHECK(ok, ShapeError, kWhere, ": tensor ", i, " ", to_string(s), " must match tensor 0 ",
                 to_string(first.shape()), " except in dim ", d);
    out_shape[static_cast<std::size_t>(d)] += s[static_cast<std::size_t>(d)];
  }
  checked_numel(out_shape, "cat output");
  Tensor y = Tensor::empty(out_shape);
  if (y.numel() == 0) return y;
  Index outer = 1, inner = 1;
  for (int k = 0; k < d; ++k) outer *= out_shape[static_cast<std::size_t>(k)];
  for (int k = d + 1; k < rank; ++k) inner *= out_shape[static_cast<std::size_t>(k)];
  const Index out_row = out_shape[static_cast<std::size_t>(d)] * inner;
  std::vector<Index> offset(tensors.size());
  Index acc = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    offset[i] = acc;
    acc += tensors[i].shape()[static_cast<std::size_t>(d)] * inner;
  }
  float* dst = y.data();
  detail::parallel_ranges(outer, detail::items_per_task(out_row), [&](Index o0, Index o1) {
    for (Index o = o0; o < o1; ++o) {
      for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Index n = tensors[i].shape()[static_cast<std::size_t>(d)] * inner;
        if (n == 0) continue;
        std::memcpy(dst + o * out_row + offset[i], tensors[i].data() + o * n,
                    static_cast<std::size_t>(n) * sizeof(float));
      }
    }
  });
  return y;
}

Tensor permute(const Tensor& x, const std::vector<int>& dims) {
  constexpr const char* kWhere = "permute";
  check_defined(x, "input", kWhere);
  const int rank = x.rank();
  CVATTN_CHECK(static_cast<int>(dims.size()) == rank, ValueError, kWhere, ": dims has ",
               dims.size(), " entries for tensor 'input' ", to_string(x.shape()), " of rank ",
               rank);
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  const Shape in_stride = strides_of(x.shape());
  Shape shape, stride;
  for (const int d : dims) {
    const int k = wrap_dim(d, rank, kWhere, "dim", x);
    CVATTN_CHECK(!seen[static_cast<std::size_t>(k)], ValueError, kWhere, ": dim ", k,
                 " appears more than once in dims");
    seen[static_cast<std::size_t>(k)] = true;
    shape.push_back(x.shape()[static_cast<std::size_t>(k)]);
    stride.push_back(in_stride[static_cast<std::size_t>(k)]);
  }
  Tensor y = Tensor::empty(shape);
  if (y.numel() > 0) strided_copy(x.data(), shape, stride, y.data());
  return y;
}

Tensor transpose(const Tensor& x, int dim0, int dim1) {
  check_defined(x, "input", "transpose");
  const int rank = x.rank();
  const int a = wrap_dim(dim0, rank, "transpose", "dim0", x);
  const int b = wrap_dim(dim1, rank, "transpose", "dim1", x);
  std::vector<int> order(static_cast<std::size_t>(rank));
  for (int i = 0; i < rank; ++i) order[static_cast<std::size_t>(i)] = i;
  std::swap(order[static_cast<std::size_t>(a)], order[static_cast<std::size_t>(b)]);
  return permute(x, order);
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  constexpr const char* kWhere = "reshape";
  check_defined(x, "input", kWhere);
  Index known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      CVATTN_CHECK(infer < 0, ValueError, kWhere, ": more than one -1 in shape ", requested(shape));
      infer = static_cast<int>(i);
    } else {
      CVATTN_CHECK(shape[i] >= 0, ValueError, kWhere, ": invalid size ", shape[i], " in shape ",
                   requested(shape));
      known *= shape[i];
    }
  }
  const bool ok = infer >= 0 ? (known > 0 && x.numel() % known == 0) : known == x.numel();
  CVATTN_CHECK(ok, ShapeError, kWhere, ": shape ", requested(shape),
               " is invalid for tensor 'input' ", to_string(x.shape()), " of ", x.numel(),
               " elements");
  return x.reshape(shape);
}

Tensor flatten(const Tensor& x, int start_dim, int end_dim) {
  constexpr const char* kWhere = "flatten";
  check_defined(x, "input", kWhere);
  const int rank = x.rank();
  if (rank == 0) return x.reshape({1});
  const int s = wrap_dim(start_dim, rank, kWhere, "start_dim", x);
  const int e = wrap_dim(end_dim, rank, kWhere, "end_dim", x);
  CVATTN_CHECK(s <= e, ValueError, kWhere, ": start_dim ", start_dim, " comes after end_dim ",
               end_dim, " for tensor 'input' ", to_string(x.shape()));
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  Index merged = 1;
  for (int i = s; i <= e; ++i) merged *= x.shape()[static_cast<std::size_t>(i)];
  shape.push_back(merged);
  shape.insert(shape.end(), x.shape().begin() + e + 1, x.shape().end());
  return x.reshape(shape);
}

Tensor slice(const Tensor& x, int dim, std::int64_t start, std::int64_t end, std::int64_t step) {
  constexpr const char* kWhere = "slice";
  check_defined(x, "input", kWhere);
  const int d = wrap_dim(dim, x.rank(), kWhere, "dim", x);
  CVATTN_CHECK(step >= 1, ValueError, kWhere, ": step must be positive, got ", step);
  const Index n = x.shape()[static_cast<std::size_t>(d)];
  auto clamp = [n](Index v) {
    if (v < 0) v += n;
    return std::min(std::max(v, Index{0}), n);
  };
  const Index b = clamp(start), e = std::max(clamp(end), clamp(start));
  const Index count = (e - b + step - 1) / step;
  Shape shape = x.shape();
  shape[static_cast<std::size_t>(d)] = count;
  Shape stride = strides_of(x.shape());
  const Index offset = b * stride[static_cast<std::size_t>(d)];
  stride[static_cast<std::size_t>(d)] *= step;
  Tensor y = Tensor::empty(shape);
  if (y.numel() > 0) strided_copy(x.data() + offset, shape, stride, y.data());
  return y;
}

Tensor narrow(const Tensor& x, int dim, std::int64_t start, std::int64_t length) {
  constexpr const char* kWhere = "narrow";
  check_defined(x, "input", kWhere);
  const int d = wrap_dim(dim, x.rank(), kWhere, "dim", x);
  const Index n = x.shape()[static_cast<std::size_t>(d)];
  CVATTN_CHECK(start >= -n && start <= n, ValueError, kWhere, ": start ", start,
               " out of range for dim ", d, " of size ", n, " (tensor 'input' ",
               to_string(x.shape()), ")");
  const Index b = start < 0 ? start + n : start;
  CVATTN_CHECK(length >= 0 && length <= n - b, ValueError, kWhere, ": start (", b, ") + length (",
               length, ") exceeds dim ", d, " of size ", n, " (tensor 'input' ",
               to_string(x.shape()), ")");
  return slice(x, d, b, b + length, 1);
}

Tensor select(const Tensor& x, int dim, std::int64_t index) {
  constexpr const char* kWhere = "select";
  check_defined(x, "input", kWhere);
  const int d = wrap_dim(dim, x.rank(), kWhere, "dim", x);
  const Index n = x.shape()[static_cast<std::size_t>(d)];
  CVATTN_CHECK(index >= -n && index < n, ValueError, kWhere, ": index ", index,
               " out of range for dim ", d, " of size ", n, " (tensor 'input' ",
               to_string(x.shape()), ")");
  const Index i = index < 0 ? index + n : index;
  Tensor y = slice(x, d, i, i + 1, 1);
  Shape shape = x.shape();
  shape.erase(shape.begin() + d);
  return y.reshape(shape);
}

Tensor mean(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  return reduce<false>(x, dims, keepdim, "mean");
}

Tensor amax(const Tensor& x, const std::vector<int>& dims, bool keepdim) {
  return reduce<true>(x, dims, keepdim, "amax");
}

Tensor pad(const Tensor& x, const std::vector<std::int64_t>& pads, PadMode mode, float value) {
  constexpr const char* kWhere = "pad";
  check_defined(x, "input", kWhere);
  const int rank = x.rank();
  const auto k = static_cast<int>(pads.size() / 2);
  CVATTN_CHECK(pads.size() % 2 == 0 && k <= rank, ValueError, kWhere, ": pads has ", pads.size(),
               " entries; expected an even count of at most 2 * rank (", 2 * rank,
               ") for tensor 'input' ", to_string(x.shape()));
  if (mode != PadMode::constant) {
    CVATTN_CHECK(k >= 1 && k <= 3 && (rank == k + 1 || rank == k + 2), ValueError, kWhere, ": ",
                 to_string(mode), " padding of ", k, " dims expects a tensor of rank ", k + 1,
                 " or ", k + 2, ", got 'input' ", to_string(x.shape()));
  }
  // Per dim: output size and, per output index, the source index (-1: the constant value).
  Shape out_shape = x.shape();
  std::vector<std::vector<Index>> maps(static_cast<std::size_t>(rank));
  for (int j = 0; j < k; ++j) {
    const auto dim = static_cast<std::size_t>(rank - 1 - j);
    const Index lo = pads[static_cast<std::size_t>(2 * j)];
    const Index hi = pads[static_cast<std::size_t>(2 * j + 1)];
    const Index n = x.shape()[dim];
    const Index m = n + lo + hi;
    CVATTN_CHECK(m >= 0, ValueError, kWhere, ": pads (", lo, ", ", hi, ") of dim ", dim,
                 " leave a negative size for tensor 'input' ", to_string(x.shape()));
    switch (mode) {
      case PadMode::constant:
        break;
      case PadMode::reflect:
        CVATTN_CHECK(lo >= 0 && hi >= 0 && lo < n && hi < n, ValueError, kWhere, ": reflect pads (",
                     lo, ", ", hi, ") must be non-negative and less than", " dim ", dim,
                     " of size ", n, " of tensor 'input' ", to_string(x.shape()));
        break;
      case PadMode::replicate:
        CVATTN_CHECK(n > 0 || m == 0, ValueError, kWhere, ": replicate padding of dim ", dim,
                     " of size 0 (tensor 'input' ", to_string(x.shape()), ")");
        break;
      case PadMode::circular:
        CVATTN_CHECK(lo <= n && hi <= n && n + std::min<Index>(lo, 0) + std::min<Index>(hi, 0) > 0,
                     ValueError, kWhere, ": circular pads (", lo, ", ", hi,
                     ") wrap around more than once dim ", dim, " of size ", n,
                     " of tensor 'input' ", to_string(x.shape()));
        break;
    }
    out_shape[dim] = m;
    auto& map = maps[dim];
    map.resize(static_cast<std::size_t>(m));
    const Index c_lo = std::max<Index>(0, -lo), c_n = n - c_lo - std::max<Index>(0, -hi);
    for (Index o = 0; o < m; ++o) {
      const Index i = o - lo;
      Index s = i;
      if (i < 0 || i >= n) {
        switch (mode) {
          case PadMode::constant:
            s = -1;
            break;
          case PadMode::reflect:
            s = i < 0 ? -i : 2 * (n - 1) - i;
            break;
          case PadMode::replicate:
            s = i < 0 ? 0 : n - 1;
            break;
          case PadMode::circular:
            break;
        }
      }
      if (mode == PadMode::circular) {
        const Index r = o - std::max<Index>(lo, 0);
        s = c_lo + ((r % c_n) + c_n) % c_n;
      }
      map[static_cast<std::size_t>(o)] = s;
    }
  }
  checked_numel(out_shape, "pad output");
  Tensor y = Tensor::empty(out_shape);
  if (y.numel() == 0) return y;
  const Shape in_stride = strides_of(x.shape());
  const Index inner = out_shape.back();
  const Index rows = y.numel() / inner;
  const auto& last_map = maps.back();
  const float* src = x.data();
  float* dst = y.data();
  const Index rows_per_task = std::max<Index>(1, kChunk / inner);
  cvattn::detail::parallel_for(detail::ceil_div(rows, rows_per_task), [&](Index t) {
    const Index r1 = std::min(rows, (t + 1) * rows_per_task);
    for (Index r = t * rows_per_task; r < r1; ++r) {
      Index rest = r, off = 0;
      bool fill = false;
      for (int d = rank - 2; d >= 0; --d) {
        const auto du = static_cast<std::size_t>(d);
        const Index o = rest % out_shape[du];
        rest /= out_shape[du];
        const Index s = maps[du].empty() ? o : maps[du][static_cast<std::size_t>(o)];
        if (s < 0) fill = true;
        off += s * in_stride[du];
      }
      float* __restrict out = dst + r * inner;
      if (fill) {
        std::fill(out, out + inner, value);
        continue;
      }
      const float* __restrict in = src + off;
      if (last_map.empty()) {
        std::memcpy(out, in, static_cast<std::size_t>(inner) * sizeof(float));
      } else {
        for (Index o = 0; o < inner; ++o) {
          const Index s = last_map[static_cast<std::size_t>(o)];
          out[o] = s < 0 ? value : in[s];
        }
      }
    }
  });
  return y;
}

}  // namespace cvattn::functional

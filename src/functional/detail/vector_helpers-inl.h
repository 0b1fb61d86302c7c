// Vector helpers shared by the kernel families' -inl.h files (activations, softmax rows,
// softmax along an axis): the partial last vector of a row, and ShortExp. Included once per
// Highway target (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_VECTOR_HELPERS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_VECTOR_HELPERS_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_VECTOR_HELPERS_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_VECTOR_HELPERS_INL_H_
#endif

#include <hwy/highway.h>

#include <cstdint>
#include <cstring>

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The first count (< Lanes) floats of p as a vector, 0 past them, without reading past p + count.
template <class D>
HWY_INLINE hn::VFromD<D> LoadTail(D d, const float* HWY_RESTRICT p, std::int64_t count) {
  HWY_ALIGN float buf[hn::MaxLanes(d)] = {};
  std::memcpy(buf, p, static_cast<std::size_t>(count) * sizeof(float));
  return hn::Load(d, buf);
}

// p[0, count) = the first count (< Lanes) lanes of v.
template <class D>
HWY_INLINE void StoreTail(D d, hn::VFromD<D> v, float* HWY_RESTRICT p, std::int64_t count) {
  HWY_ALIGN float buf[hn::MaxLanes(d)];
  hn::Store(v, d, buf);
  std::memcpy(p, buf, static_cast<std::size_t>(count) * sizeof(float));
}

// e^v for v in [-87, 88] (the caller clamps, so the power of two is a normal float): n =
// round(v / ln 2), r = v - n ln 2 in two parts (Cody-Waite), Cephes' degree-7 expf polynomial in
// r (about 1 ulp), times 2^n built in the exponent bits. Cheaper than Highway's general Exp, for
// silu, sigmoid and softmax, where exp is most of the work.
template <class D, class V>
HWY_INLINE V ShortExp(D d, V v) {
  const hn::RebindToSigned<D> di;
  const V n = hn::Round(hn::Mul(v, hn::Set(d, 1.44269504088896341f)));
  V r = hn::NegMulAdd(n, hn::Set(d, 0.693359375f), v);
  r = hn::NegMulAdd(n, hn::Set(d, -2.12194440e-4f), r);
  V p = hn::Set(d, 1.9875691500e-4f);
  p = hn::MulAdd(p, r, hn::Set(d, 1.3981999507e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 8.3334519073e-3f));
  p = hn::MulAdd(p, r, hn::Set(d, 4.1665795894e-2f));
  p = hn::MulAdd(p, r, hn::Set(d, 1.6666665459e-1f));
  p = hn::MulAdd(p, r, hn::Set(d, 5.0000001201e-1f));
  p = hn::MulAdd(p, hn::Mul(r, r), hn::Add(r, hn::Set(d, 1.0f)));
  const auto bits = hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127)));
  return hn::Mul(p, hn::BitCast(d, bits));
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle

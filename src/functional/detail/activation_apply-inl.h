// One activation applied to a vector, Apply<kAct>(d, v), for every kernel family that fuses an
// activation into its stores (the activation loops, the pointwise convolution). Included once
// per Highway target (Highway's toggle instead of an include guard).
#if defined(CVATTN_FUNCTIONAL_DETAIL_ACTIVATION_APPLY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CVATTN_FUNCTIONAL_DETAIL_ACTIVATION_APPLY_INL_H_
#undef CVATTN_FUNCTIONAL_DETAIL_ACTIVATION_APPLY_INL_H_
#else
#define CVATTN_FUNCTIONAL_DETAIL_ACTIVATION_APPLY_INL_H_
#endif

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include "cvattn/functional/activation.hpp"
#include "functional/detail/vector_helpers-inl.h"

HWY_BEFORE_NAMESPACE();
namespace cvattn::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// exp's argument is kept below 88, where float exp is finite; the callers fix the lanes that the
// clamp changes.
constexpr float kExpLimit = 88.0f;

// ShortExp(-x) with -x clamped to [-87, 88] (NaN x: a finite value, the caller keeps the NaN).
template <class D, class V>
HWY_INLINE V ShortExpNeg(D d, V x) {
  return ShortExp(d, hn::Min(hn::Max(hn::Neg(x), hn::Set(d, -87.0f)), hn::Set(d, kExpLimit)));
}

// Eigen's float erf (the reference's): x clamped to [-4, 4], odd degree-13 over even degree-8
// rational polynomial.
template <class D, class V>
HWY_INLINE V Erf(D d, V a) {
  const V x = hn::Min(hn::Max(a, hn::Set(d, -4.0f)), hn::Set(d, 4.0f));
  const V x2 = hn::Mul(x, x);
  V p = hn::MulAdd(x2, hn::Set(d, -2.72614225801306e-10f), hn::Set(d, 2.77068142495902e-08f));
  p = hn::MulAdd(x2, p, hn::Set(d, -2.10102402082508e-06f));
  p = hn::MulAdd(x2, p, hn::Set(d, -5.69250639462346e-05f));
  p = hn::MulAdd(x2, p, hn::Set(d, -7.34990630326855e-04f));
  p = hn::MulAdd(x2, p, hn::Set(d, -2.95459980854025e-03f));
  p = hn::MulAdd(x2, p, hn::Set(d, -1.60960333262415e-02f));
  p = hn::Mul(x, p);
  V q = hn::MulAdd(x2, hn::Set(d, -1.45660718464996e-05f), hn::Set(d, -2.13374055278905e-04f));
  q = hn::MulAdd(x2, q, hn::Set(d, -1.68282697438203e-03f));
  q = hn::MulAdd(x2, q, hn::Set(d, -7.37332916720468e-03f));
  q = hn::MulAdd(x2, q, hn::Set(d, -1.42647390514189e-02f));
  return hn::Div(p, q);
}

// tanh with its limits: +-1 beyond |x| = 9 (float tanh is +-1 there), NaN kept.
template <class D, class V>
HWY_INLINE V SafeTanh(D d, V x) {
  const V big = hn::Set(d, 9.0f);
  const V t = hn::Tanh(d, hn::Min(hn::Max(x, hn::Neg(big)), big));
  return hn::IfThenElse(hn::IsNaN(x), x, t);
}

template <ActLayer kAct, class D, class V>
HWY_INLINE V Apply(D d, V x) {
  const V zero = hn::Zero(d), one = hn::Set(d, 1.0f);
  switch (kAct) {
    case ActLayer::identity:
      return x;
    case ActLayer::relu:  // comparisons false for NaN keep it, as PyTorch does
      return hn::IfThenElse(hn::Lt(x, zero), zero, x);
    case ActLayer::relu6: {
      const V v = hn::IfThenElse(hn::Lt(x, zero), zero, x);
      const V six = hn::Set(d, 6.0f);
      return hn::IfThenElse(hn::Gt(v, six), six, v);
    }
    case ActLayer::hard_swish: {
      const V six = hn::Set(d, 6.0f);
      V t = hn::Add(x, hn::Set(d, 3.0f));
      t = hn::IfThenElse(hn::Lt(t, zero), zero, t);
      t = hn::IfThenElse(hn::Gt(t, six), six, t);
      // Times 1/6 rather than / 6: within an ulp, and no division in a memory-bound loop.
      return hn::Mul(hn::Mul(x, t), hn::Set(d, 1.0f / 6.0f));
    }
    case ActLayer::hard_sigmoid: {
      V t = hn::Mul(hn::Add(x, hn::Set(d, 3.0f)), hn::Set(d, 1.0f / 6.0f));
      t = hn::IfThenElse(hn::Lt(t, zero), zero, t);
      return hn::IfThenElse(hn::Gt(t, one), one, t);
    }
    case ActLayer::sigmoid: {
      const V y = hn::Div(one, hn::Add(ShortExpNeg(d, x), one));
      return hn::IfThenElse(hn::IsNaN(x), x, y);
    }
    case ActLayer::silu: {
      const V y = hn::Div(x, hn::Add(ShortExpNeg(d, x), one));
      // Below -88 silu is x * 0: -0 for finite x, NaN for -inf (as x * sigmoid(x) in PyTorch).
      return hn::IfThenElse(hn::Lt(x, hn::Set(d, -kExpLimit)), hn::Mul(x, zero), y);
    }
    case ActLayer::tanh:
      return SafeTanh(d, x);
    case ActLayer::gelu: {
      const V e = Erf(d, hn::Mul(x, hn::Set(d, 0.7071067811865476f)));
      return hn::Mul(hn::Mul(x, hn::Set(d, 0.5f)), hn::Add(e, one));
    }
    case ActLayer::gelu_tanh: {
      const V inner = hn::Mul(hn::Mul(x, hn::MulAdd(hn::Mul(x, x), hn::Set(d, 0.044715f), one)),
                              hn::Set(d, 0.7978845608028654f));
      return hn::Mul(hn::Mul(x, hn::Set(d, 0.5f)), hn::Add(SafeTanh(d, inner), one));
    }
    case ActLayer::mish: {
      // tanh(log1p(e)) = n / (n + 2) with e = exp(x), n = e (e + 2); the factor is 1 from x = 20.
      const V e = hn::Exp(d, hn::Min(hn::Max(x, hn::Set(d, -kExpLimit)), hn::Set(d, 20.0f)));
      const V n = hn::Mul(e, hn::Add(e, hn::Set(d, 2.0f)));
      const V y = hn::Mul(x, hn::Div(n, hn::Add(n, hn::Set(d, 2.0f))));  // no x * n overflow
      // Far below -88 mish is x * 0: -0 for finite x, NaN for -inf.
      return hn::IfThenElse(hn::Lt(x, hn::Set(d, -kExpLimit)), hn::Mul(x, zero), y);
    }
  }
  return x;
}

}  // namespace cvattn::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle

// Elementwise math beyond the basics, each a formula on Math (elementwise.h) following PyTorch's
// CPU kernels' special cases.
#include "lowering/special_math.h"

#include <cmath>

#include "lowering/common.h"
#include "lowering/elementwise.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Cmp;
using hlo::ElementType;
using hlo::Value;
using Operands = std::vector<Value>;

// The sign bit of a float, NaN and -0 included.
Value sign_bit(const Math& m, Value x) {
  const ElementType bits = m.t == ElementType::F64 ? ElementType::I64 : ElementType::I32;
  return m.cmp(Cmp::LT, m.b.bitcast_convert(x, bits), full(m.b, 0, bits, m.dims));
}

Value copysign(const Math& m, const Operands& x, const graph::Attrs&) {
  Value magnitude = m.un("abs", x[0]);
  return m.sel(sign_bit(m, x[1]), m.un("negate", magnitude), magnitude);
}

Value is_inf(const Math& m, Value x) { return m.cmp(Cmp::EQ, m.un("abs", x), m.c(INFINITY)); }

// hi * sqrt(1 + (lo / hi)^2) with hi = max(|x|, |y|).
Value hypot(const Math& m, const Operands& x, const graph::Attrs&) {
  Value a = m.un("abs", x[0]), b = m.un("abs", x[1]);
  Value hi = m.max(a, b), lo = m.min(a, b);
  Value q = m.div(lo, hi);
  Value r = m.mul(hi, m.un("sqrt", m.add(m.c(1), m.mul(q, q))));
  r = m.sel(m.cmp(Cmp::EQ, hi, m.c(0)), m.c(0), r);
  return m.sel(m.b.binary("or", is_inf(m, a), is_inf(m, b)), m.c(INFINITY), r);
}

// max + log1p(exp(-|a - b|)) (base 2: max + log1p(2^-|a - b|) / ln 2); equal infinities give
// themselves rather than inf - inf.
template <bool Base2>
Value logaddexp(const Math& m, const Operands& x, const graph::Attrs& = {}) {
  Value hi = m.max(x[0], x[1]);
  Value gap = m.un("negate", m.un("abs", m.sub(x[0], x[1])));
  Value r =
      Base2
          ? m.add(hi, m.mul(m.un("log_plus_one", m.b.binary("power", m.c(2), gap)), m.c(1 / M_LN2)))
          : m.add(hi, m.un("log_plus_one", m.un("exponential", gap)));
  Value same_inf = m.b.binary("and", is_inf(m, x[0]), m.cmp(Cmp::EQ, x[0], x[1]));
  return m.sel(same_inf, x[0], r);
}

template <bool Plus1>
Value xlogy(const Math& m, const Operands& x, const graph::Attrs&) {
  Value r = m.mul(x[0], m.un(Plus1 ? "log_plus_one" : "log", x[1]));
  r = m.sel(m.cmp(Cmp::EQ, x[0], m.c(0)), m.c(0), r);
  return m.sel(m.isnan(x[1]), x[1], r);
}

Value heaviside(const Math& m, const Operands& x, const graph::Attrs&) {
  Value positive = m.sel(m.cmp(Cmp::GT, x[0], m.c(0)), m.c(1), m.c(0));
  return m.sel(m.cmp(Cmp::EQ, x[0], m.c(0)), x[1], positive);
}

Value sinc(const Math& m, const Operands& x, const graph::Attrs&) {
  Value product = m.mul(m.c(M_PI), x[0]);
  return m.sel(m.cmp(Cmp::EQ, x[0], m.c(0)), m.c(1), m.div(m.un("sine", product), product));
}

Value logit(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  Value v = x[0];
  if (!attrs.floats.empty()) {
    const double eps = attrs.floats[0];
    Value lo = m.c(eps), hi = m.c(1 - eps);
    v = m.sel(m.cmp(Cmp::LT, v, lo), lo, m.sel(m.cmp(Cmp::GT, v, hi), hi, v));
  }
  return m.un("log", m.div(v, m.sub(m.c(1), v)));
}

Value erfc_f64(const Math& m, Value x) { return m.erfc(x); }

// Lanczos (g = 7, 9 terms) for x >= 0.5, the reflection formula below; computed in f64 so f32
// keeps full precision. lgamma of 0 and the negative integers is +inf.
Value lgamma_f64(const Math& m, Value x) {
  static const double kCoeffs[] = {
      0.99999999999980993,  676.5203681218851,     -1259.1392167224028,
      771.32342877765313,   -176.61502916214059,   12.507343278686905,
      -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7};
  Value reflected = m.sel(m.cmp(Cmp::LT, x, m.c(0.5)), m.sub(m.c(1), x), x);  // >= 0.5
  Value z = m.sub(reflected, m.c(1));
  Value sum = m.c(kCoeffs[0]);
  for (int i = 1; i < 9; ++i) sum = m.add(sum, m.div(m.c(kCoeffs[i]), m.add(z, m.c(i))));
  Value t = m.add(z, m.c(7.5));
  Value direct = m.add(m.add(m.c(0.5 * std::log(2 * M_PI)), m.un("log", sum)),
                       m.sub(m.mul(m.add(z, m.c(0.5)), m.un("log", t)), t));
  // lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x) for x < 0.5.
  Value sine = m.un("abs", m.un("sine", m.mul(m.c(M_PI), x)));
  Value reflection = m.sub(m.un("log", m.div(m.c(M_PI), sine)), direct);
  Value r = m.sel(m.cmp(Cmp::LT, x, m.c(0.5)), reflection, direct);
  Value pole = m.b.binary("and", m.cmp(Cmp::LE, x, m.c(0)), m.cmp(Cmp::EQ, x, m.un("floor", x)));
  r = m.sel(pole, m.c(INFINITY), r);
  return m.sel(m.cmp(Cmp::EQ, m.un("abs", x), m.c(INFINITY)), m.c(INFINITY), r);
}

// Recurrence up to x >= 10, then the asymptotic series; the reflection formula for x < 0.
// digamma(0) is -inf (of -0: +inf) and NaN at the negative integers, as in PyTorch.
Value digamma_f64(const Math& m, Value x) {
  Value negative = m.cmp(Cmp::LT, x, m.c(0));
  Value v = m.sel(negative, m.sub(m.c(1), x), x);
  Value shift = m.c(0);
  for (int i = 0; i < 10; ++i) {
    Value small = m.cmp(Cmp::LT, v, m.c(10));
    shift = m.sel(small, m.sub(shift, m.div(m.c(1), v)), shift);
    v = m.sel(small, m.add(v, m.c(1)), v);
  }
  static const double kBernoulli[] = {1.0 / 12,  -1.0 / 120,     1.0 / 252, -1.0 / 240,
                                      1.0 / 132, -691.0 / 32760, 1.0 / 12};
  Value inv2 = m.div(m.c(1), m.mul(v, v));
  Value series = m.c(kBernoulli[6]);
  for (int i = 5; i >= 0; --i) series = m.add(m.c(kBernoulli[i]), m.mul(series, inv2));
  Value r = m.add(shift, m.sub(m.sub(m.un("log", v), m.div(m.c(0.5), v)), m.mul(series, inv2)));
  Value tangent = m.un("tan", m.mul(m.c(M_PI), x));
  r = m.sel(negative, m.sub(r, m.div(m.c(M_PI), tangent)), r);
  Value zero = m.cmp(Cmp::EQ, x, m.c(0));
  Value neg_int = m.b.binary("and", negative, m.cmp(Cmp::EQ, x, m.un("floor", x)));
  r = m.sel(neg_int, m.c(NAN), r);
  Value pole = m.sel(sign_bit(m, x), m.c(INFINITY), m.c(-INFINITY));
  r = m.sel(zero, pole, r);
  return m.sel(m.cmp(Cmp::EQ, x, m.c(INFINITY)), x, r);
}

Value shift_left(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.b.binary("shift_left", x[0], x[1]);
}

Value shift_right(const Math& m, const Operands& x, const graph::Attrs&) {
  const bool logical = runtime::is_unsigned(m.t);
  return m.b.binary(logical ? "shift_right_logical" : "shift_right_arithmetic", x[0], x[1]);
}

template <MathFn F>
std::vector<Value> emit(hlo::Builder& b, const Operands& in, const graph::Attrs& attrs,
                        const std::vector<hlo::TensorType>& outs) {
  return lower_math(F, b, in, attrs, outs);
}

}  // namespace

Value log_add_exp(const Math& m, Value a, Value b) { return logaddexp<false>(m, {a, b}); }
Value log_gamma(const Math& m, Value x) { return lgamma_f64(m, x); }

const graph::OpDef kCopysign{"copysign", emit<copysign>};
const graph::OpDef kHypot{"hypot", emit<hypot>};
const graph::OpDef kLogaddexp{"logaddexp", emit<logaddexp<false>>};
const graph::OpDef kLogaddexp2{"logaddexp2", emit<logaddexp<true>>};
const graph::OpDef kXlogy{"xlogy", emit<xlogy<false>>};
const graph::OpDef kXlog1py{"xlog1py", emit<xlogy<true>>};
const graph::OpDef kHeaviside{"heaviside", emit<heaviside>};
const graph::OpDef kSinc{"sinc", emit<sinc>};
const graph::OpDef kLogit{"logit", emit<logit>};
const graph::OpDef kErfc{"erfc", emit<in_f64<erfc_f64>>};
const graph::OpDef kLgamma{"lgamma", emit<in_f64<lgamma_f64>>};
const graph::OpDef kDigamma{"digamma", emit<in_f64<digamma_f64>>};
const graph::OpDef kShiftLeft{"shift_left", emit<shift_left>};
const graph::OpDef kShiftRight{"shift_right", emit<shift_right>};

}  // namespace torch_pjrt::lowering

// erfcx, log_ndtr and ndtri from erfc (elementwise.h), erfc's continued fraction and Newton's
// method, in f64 with PyTorch's CPU special values.
#include "lowering/normal_functions.h"

#include <cmath>

#include "lowering/common.h"
#include "lowering/elementwise.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Cmp;
using hlo::Value;
using Operands = std::vector<Value>;

Value lt(const Math& m, Value x, double v) { return m.cmp(Cmp::LT, x, m.c(v)); }

// Where the continued fraction takes over from exp(x^2) erfc(x).
constexpr double kSplit = 2;

// The continued fraction K(t) = t + (1/2)/(t + 1/(t + (3/2)/(t + ...))), with which
// erfc(t) = exp(-t^2) / (sqrt(pi) K(t)), for t >= kSplit (where 60 terms reach f64 precision;
// below it converges slowly, while above it 1 - erf(t) would lose digits).
Value erfc_fraction(const Math& m, Value t) {
  Value k = t;
  for (int n = 60; n > 0; --n) k = m.add(t, m.div(m.c(n / 2.0), k));
  return k;
}

Value erfcx_f64(const Math& m, Value x) {
  const Value large = m.cmp(Cmp::GE, x, m.c(kSplit));
  const Value t = m.sel(large, x, m.c(kSplit));
  const Value scaled = m.div(m.c(1 / std::sqrt(M_PI)), erfc_fraction(m, t));
  const Value direct = m.mul(m.un("exponential", m.mul(x, x)), m.erfc(x));
  return m.sel(large, scaled, direct);
}

Value log_ndtr_f64(const Math& m, Value x) {
  const Value t = m.mul(x, m.c(-M_SQRT1_2));
  const Value far = m.cmp(Cmp::GE, t, m.c(kSplit));
  const Value k = erfc_fraction(m, m.sel(far, t, m.c(kSplit)));
  const Value tail =
      m.sub(m.mul(m.mul(x, x), m.c(-0.5)), m.un("log", m.mul(k, m.c(2 * std::sqrt(M_PI)))));
  const Value negative = m.un("log", m.mul(m.erfc(t), m.c(0.5)));
  // erfc(-t) for x >= 0, by the continued fraction from kSplit on (1 - erf loses digits there).
  const Value u = m.un("negate", t);
  const Value u_far = m.cmp(Cmp::GE, u, m.c(kSplit));
  const Value ku = erfc_fraction(m, m.sel(u_far, u, m.c(kSplit)));
  const Value upper = m.sel(
      u_far,
      m.div(m.un("exponential", m.un("negate", m.mul(u, u))), m.mul(ku, m.c(std::sqrt(M_PI)))),
      m.erfc(u));
  const Value positive = m.un("log_plus_one", m.mul(upper, m.c(-0.5)));
  return m.sel(far, tail, m.sel(lt(m, x, 0), negative, positive));
}

// For y = min(p, 1 - p) in (0, 0.5]: the smaller (further out) of the tail guess from
// y ~ phi(x) / |x|, x^2 ~ u - log u - log(2 pi) with u = -2 log y, and the linearization at 0.
// log(Phi) is concave, so Newton's method on it approaches the root from below after the first
// step; from this guess 8 steps reach f64 precision.
Value ndtri_f64(const Math& m, Value p) {
  const Value y = m.min(p, m.sub(m.c(1), p));
  const Value valid = m.b.binary("and", m.cmp(Cmp::GT, y, m.c(0)), m.cmp(Cmp::LE, y, m.c(0.5)));
  const Value v = m.sel(valid, y, m.c(0.25));
  const Value u = m.mul(m.c(-2), m.un("log", v));
  const Value squared = m.sub(m.sub(u, m.un("log", u)), m.c(std::log(2 * M_PI)));
  const Value tail = m.un("negate", m.un("sqrt", m.max(squared, m.c(0))));
  Value x = m.min(tail, m.mul(m.sub(v, m.c(0.5)), m.c(std::sqrt(2 * M_PI))));
  const Value log_y = m.un("log", v);
  for (int i = 0; i < 8; ++i) {
    Value log_cdf = log_ndtr_f64(m, x);
    // d/dx log(Phi) = phi(x) / Phi(x).
    Value log_pdf = m.sub(m.mul(m.mul(x, x), m.c(-0.5)), m.c(0.5 * std::log(2 * M_PI)));
    Value slope = m.un("exponential", m.sub(log_pdf, log_cdf));
    x = m.sub(x, m.div(m.sub(log_cdf, log_y), slope));
  }
  Value r = m.sel(lt(m, p, 0.5), x, m.un("negate", x));
  r = m.sel(m.cmp(Cmp::EQ, p, m.c(0)), m.c(-INFINITY), r);
  r = m.sel(m.cmp(Cmp::EQ, p, m.c(1)), m.c(INFINITY), r);
  const Value outside = m.b.binary("or", lt(m, p, 0), m.cmp(Cmp::GT, p, m.c(1)));
  return m.sel(m.b.binary("or", outside, m.isnan(p)), m.c(NAN), r);
}

template <MathFn F>
std::vector<Value> emit(hlo::Builder& b, const Operands& in, const graph::Attrs& attrs,
                        const std::vector<hlo::TensorType>& outs) {
  return lower_math(F, b, in, attrs, outs);
}

}  // namespace

const graph::OpDef kErfcx{"special_erfcx", emit<in_f64<erfcx_f64>>};
const graph::OpDef kLogNdtr{"special_log_ndtr", emit<in_f64<log_ndtr_f64>>};
const graph::OpDef kNdtri{"special_ndtri", emit<in_f64<ndtri_f64>>};

}  // namespace torch_pjrt::lowering

// The Hurwitz zeta function, polygamma and the incomplete gamma functions from their series,
// Euler-Maclaurin sums and continued fractions, in f64, with PyTorch's CPU special values.
#include "lowering/gamma_functions.h"

#include <cmath>
#include <cstdint>

#include "lowering/common.h"
#include "lowering/elementwise.h"
#include "lowering/special_math.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Cmp;
using hlo::ElementType;
using hlo::Value;
using Operands = std::vector<Value>;

Value both(const Math& m, Value a, Value b) { return m.b.binary("and", a, b); }
Value either(const Math& m, Value a, Value b) { return m.b.binary("or", a, b); }
Value lt(const Math& m, Value x, double v) { return m.cmp(Cmp::LT, x, m.c(v)); }
Value gt(const Math& m, Value x, double v) { return m.cmp(Cmp::GT, x, m.c(v)); }
Value eq(const Math& m, Value x, double v) { return m.cmp(Cmp::EQ, x, m.c(v)); }
Value is_integer(const Math& m, Value x) { return m.cmp(Cmp::EQ, x, m.un("floor", x)); }
Value finite(const Math& m, Value x) { return lt(m, m.un("abs", x), INFINITY); }

// Whether any element of `p` is true, as a rank-0 bool.
Value any(const Math& m, Value p) {
  std::vector<int64_t> all(m.dims.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  return m.b.reduce(p, m.b.constant_int(0, ElementType::Bool), all, hlo::ReduceKind::Or);
}

// The loop counter's value broadcast to the element shape, in the math type.
Value counter(const Math& m, Value i) {
  return m.b.convert(m.b.broadcast_in_dim(i, m.dims, {}), m.t);
}

// B_2j / (2j)! for j = 1..12, from the Bernoulli numbers B_2j.
double bernoulli_over_factorial(int j) {
  static const double kBernoulli[] = {
      1.0 / 6, -1.0 / 30,     1.0 / 42,      -1.0 / 30,       5.0 / 66,       -691.0 / 2730,
      7.0 / 6, -3617.0 / 510, 43867.0 / 798, -174611.0 / 330, 854513.0 / 138, -236364091.0 / 2730};
  double factorial = 1;
  for (int k = 2; k <= 2 * j; ++k) factorial *= k;
  return kBernoulli[j - 1] / factorial;
}

// sum_{k>=0} (q + k)^-x (f64) for the elements where `active` holds, which must have x > 1 finite
// and q finite, an integer x where q < 0. The first terms are summed directly (at least 10, and
// until q + k >= 10), with their signs where q + k < 0; the rest, from w = q + k on, by
// Euler-Maclaurin: w^(1-x)/(x-1) + w^-x/2 + sum_j B_2j/(2j)! x(x+1)..(x+2j-2) w^(1-x-2j), whose
// remainder after j = 12 is far below f64 rounding for w >= 10 and w >= q + 10.
Value hurwitz(const Math& m, Value x, Value q, Value active) {
  hlo::Builder& b = m.b;
  const Value neg_x = m.un("negate", x);
  const Value odd = eq(m, m.sub(x, m.mul(m.c(2), m.un("floor", m.mul(x, m.c(0.5))))), 1);
  auto power = [&](Value t) {
    Value r = b.binary("power", m.un("abs", t), neg_x);
    return m.sel(both(m, lt(m, t, 0), odd), m.un("negate", r), r);
  };
  const Value ten = b.constant_int(10, ElementType::I64);
  auto out = b.while_loop(
      {b.constant_int(0, ElementType::I64), m.sel(active, q, m.c(10)), m.c(0)},
      [&](hlo::Builder&, const Operands& c) {
        return Operands{b.binary("or", b.compare(Cmp::LT, c[0], ten), any(m, lt(m, c[1], 10)))};
      },
      [&](hlo::Builder&, const Operands& c) {
        Value first = b.broadcast_in_dim(b.compare(Cmp::LT, c[0], ten), m.dims, {});
        Value step = either(m, first, lt(m, c[1], 10));
        return Operands{b.binary("add", c[0], b.constant_int(1, ElementType::I64)),
                        m.sel(step, m.add(c[1], m.c(1)), c[1]),
                        m.sel(step, m.add(c[2], power(c[1])), c[2])};
      });
  const Value w = out[1];
  const Value wx = b.binary("power", w, neg_x);
  Value s = m.add(out[2], m.add(m.div(m.mul(wx, w), m.sub(x, m.c(1))), m.mul(wx, m.c(0.5))));
  // x(x+1)..(x+2j-2) w^(1-x-2j), updated by (x+2j-1)(x+2j)/w^2 from one j to the next.
  Value p = m.div(m.mul(x, wx), w);
  const Value inv_w2 = m.div(m.c(1), m.mul(w, w));
  for (int j = 1; j <= 12; ++j) {
    s = m.add(s, m.mul(m.c(bernoulli_over_factorial(j)), p));
    p = m.mul(p, m.mul(m.mul(m.add(x, m.c(2 * j - 1)), m.add(x, m.c(2 * j))), inv_w2));
  }
  return s;
}

// Negative q further than this would take too many direct terms; such q give NaN.
constexpr double kMostNegativeQ = -1e6;

// zeta(x, q) in f64 with PyTorch's special values (see gamma_functions.h); for x == inf, the
// first term's limit where it decides the sum: inf for q < 1, 1 at q == 1, else NaN.
Value zeta_f64(const Math& m, Value x, Value q) {
  const Value pole = both(m, m.cmp(Cmp::LE, q, m.c(0)), is_integer(m, q));
  const Value negative_q_real_x = both(m, lt(m, q, 0), m.un("not", is_integer(m, x)));
  Value active = both(m, both(m, gt(m, x, 1), finite(m, x)), finite(m, q));
  active = both(m, both(m, active, m.un("not", pole)), m.un("not", negative_q_real_x));
  active = both(m, active, m.cmp(Cmp::GE, q, m.c(kMostNegativeQ)));
  Value r = m.sel(active, hurwitz(m, x, q, active), m.c(NAN));
  Value at_inf = m.sel(lt(m, q, 1), m.c(INFINITY), m.sel(eq(m, q, 1), m.c(1), m.c(NAN)));
  r = m.sel(eq(m, x, INFINITY), at_inf, r);
  r = m.sel(negative_q_real_x, m.c(NAN), r);
  r = m.sel(pole, m.c(INFINITY), r);
  r = m.sel(lt(m, x, 1), m.c(NAN), r);
  return m.sel(eq(m, x, 1), m.c(INFINITY), r);
}

Value zeta(const Math& m, const Operands& in, const graph::Attrs&) {
  if (m.t == ElementType::F64) return zeta_f64(m, in[0], in[1]);
  const Math wide{m.b, ElementType::F64, m.dims};
  return to_type(m.b, zeta_f64(wide, to_type(m.b, in[0], wide.t), to_type(m.b, in[1], wide.t)),
                 m.t);
}

// trigamma(x) = zeta(2, x) for x >= 0.5; below, pi^2 / sin^2(pi x) - trigamma(1 - x), with pi x
// rounded in the input's math type as PyTorch's kernel computes it (so the negative integers
// give large finite values). 0 at +inf, NaN at -inf.
Value trigamma(const Math& m, Value x) {
  const Math wide{m.b, ElementType::F64, m.dims};
  const Value angle = to_type(m.b, m.mul(m.c(M_PI), x), wide.t);
  const Value v = to_type(m.b, x, wide.t);
  const Value reflect = lt(wide, v, 0.5);
  const Value y = wide.sel(reflect, wide.sub(wide.c(1), v), v);
  const Value active = finite(wide, y);
  Value r =
      wide.sel(active, hurwitz(wide, wide.c(2), y, active), wide.sel(wide.isnan(y), y, wide.c(0)));
  const Value sine = wide.un("sine", angle);
  r = wide.sel(reflect, wide.sub(wide.div(wide.c(M_PI * M_PI), wide.mul(sine, sine)), r), r);
  return to_type(m.b, wide.sel(eq(wide, v, -INFINITY), wide.c(NAN), r), m.t);
}

Value polygamma(const Math& m, const Operands& in, const graph::Attrs& attrs) {
  const double n = attrs.floats[0];
  if (n == 1) return trigamma(m, in[0]);
  const Math wide{m.b, ElementType::F64, m.dims};
  const double scale = std::tgamma(n + 1) * (std::fmod(n, 2) == 0 ? -1 : 1);
  Value r = zeta_f64(wide, wide.c(n + 1), to_type(m.b, in[0], wide.t));
  return to_type(m.b, wide.mul(wide.c(scale), r), m.t);
}

// ---- Incomplete gamma ----------------------------------------------------------------------

// Iteration caps; each loop stops earlier once every element has converged. The series needs
// about sqrt(a) terms near x = a, the continued fraction fewer, so a up to ~1e5 is covered.
constexpr int64_t kMaxIterations = 5000;

// P(a, x) = x^a e^-x / gamma(a + 1) sum_{n>=0} x^n / ((a+1)..(a+n)), for x < a + 1 (positive
// decreasing terms, summed until below 1e-17 of the sum).
Value lower_series(const Math& m, Value a, Value x) {
  hlo::Builder& b = m.b;
  const Value cap = b.constant_int(kMaxIterations, ElementType::I64);
  auto out = b.while_loop(
      {b.constant_int(1, ElementType::I64), m.c(1), m.c(1)},
      [&](hlo::Builder&, const Operands& c) {
        Value pending = m.cmp(Cmp::GT, c[1], m.mul(c[2], m.c(1e-17)));
        return Operands{b.binary("and", b.compare(Cmp::LT, c[0], cap), any(m, pending))};
      },
      [&](hlo::Builder&, const Operands& c) {
        Value term = m.mul(c[1], m.div(x, m.add(a, counter(m, c[0]))));
        return Operands{b.binary("add", c[0], b.constant_int(1, ElementType::I64)), term,
                        m.add(c[2], term)};
      });
  Value log_prefix = m.sub(m.sub(m.mul(a, m.un("log", x)), x), log_gamma(m, m.add(a, m.c(1))));
  return m.mul(m.un("exponential", log_prefix), out[2]);
}

// Q(a, x) = x^a e^-x / gamma(a) / (x+1-a - 1(1-a)/(x+3-a - 2(2-a)/(x+5-a - ...))), for
// x >= a + 1, by the modified Lentz method until each factor is within 1e-15 of 1.
Value upper_fraction(const Math& m, Value a, Value x) {
  hlo::Builder& b = m.b;
  const Value cap = b.constant_int(kMaxIterations, ElementType::I64);
  const Value tiny = m.c(1e-300);
  auto nonzero = [&](Value v) { return m.sel(lt(m, m.un("abs", v), 1e-300), tiny, v); };
  const Value b1 = m.add(m.sub(x, a), m.c(1));
  // State: i, b_i, C, D, h, the last factor.
  auto out = b.while_loop(
      {b.constant_int(1, ElementType::I64), b1, m.c(1e300), m.div(m.c(1), b1), m.div(m.c(1), b1),
       m.c(0)},
      [&](hlo::Builder&, const Operands& c) {
        Value pending = gt(m, m.un("abs", m.sub(c[5], m.c(1))), 1e-15);
        return Operands{b.binary("and", b.compare(Cmp::LT, c[0], cap), any(m, pending))};
      },
      [&](hlo::Builder&, const Operands& c) {
        Value i = counter(m, c[0]);
        Value an = m.mul(m.un("negate", i), m.sub(i, a));
        Value bn = m.add(c[1], m.c(2));
        Value d = m.div(m.c(1), nonzero(m.add(m.mul(an, c[3]), bn)));
        Value cc = nonzero(m.add(bn, m.div(an, c[2])));
        Value factor = m.mul(d, cc);
        return Operands{b.binary("add", c[0], b.constant_int(1, ElementType::I64)),
                        bn,
                        cc,
                        d,
                        m.mul(c[4], factor),
                        factor};
      });
  Value log_prefix = m.sub(m.sub(m.mul(a, m.un("log", x)), x), log_gamma(m, a));
  return m.mul(m.un("exponential", log_prefix), out[4]);
}

// P (Upper false) or Q in f64 with PyTorch's special values: NaN for NaN or negative operands and
// at a == x == 0 or both infinite; P = 1 at a == 0 (x > 0) and x == inf; P = 0 at x == 0 and
// a == inf.
template <bool Upper>
Value incomplete_gamma_f64(const Math& m, Value a, Value x) {
  const Value regular =
      both(m, both(m, gt(m, a, 0), gt(m, x, 0)), both(m, finite(m, a), finite(m, x)));
  const Value series = both(m, regular, m.cmp(Cmp::LT, x, m.add(a, m.c(1))));
  const Value fraction = both(m, regular, m.un("not", series));
  // Elements outside a method get operands on which it converges at once.
  const Value p = lower_series(m, m.sel(series, a, m.c(1)), m.sel(series, x, m.c(0)));
  const Value q = upper_fraction(m, m.sel(fraction, a, m.c(1)), m.sel(fraction, x, m.c(3)));
  Value lower = m.sel(series, p, m.sub(m.c(1), q));
  lower = m.sel(either(m, eq(m, a, 0), eq(m, x, INFINITY)), m.c(1), lower);
  lower = m.sel(either(m, eq(m, x, 0), eq(m, a, INFINITY)), m.c(0), lower);
  Value r = Upper ? m.sel(series, m.sub(m.c(1), p), q) : lower;
  if (Upper) r = m.sel(regular, r, m.sub(m.c(1), lower));
  Value undefined =
      either(m, either(m, lt(m, a, 0), lt(m, x, 0)), either(m, m.isnan(a), m.isnan(x)));
  undefined = either(m, undefined, both(m, eq(m, a, 0), eq(m, x, 0)));
  undefined = either(m, undefined, both(m, eq(m, a, INFINITY), eq(m, x, INFINITY)));
  return m.sel(undefined, m.c(NAN), r);
}

template <bool Upper>
Value incomplete_gamma(const Math& m, const Operands& in, const graph::Attrs&) {
  if (m.t == ElementType::F64) return incomplete_gamma_f64<Upper>(m, in[0], in[1]);
  const Math wide{m.b, ElementType::F64, m.dims};
  Value r =
      incomplete_gamma_f64<Upper>(wide, to_type(m.b, in[0], wide.t), to_type(m.b, in[1], wide.t));
  return to_type(m.b, r, m.t);
}

template <MathFn F>
std::vector<Value> emit(hlo::Builder& b, const Operands& in, const graph::Attrs& attrs,
                        const std::vector<hlo::TensorType>& outs) {
  return lower_math(F, b, in, attrs, outs);
}

}  // namespace

const graph::OpDef kZeta{"special_zeta", emit<zeta>};
const graph::OpDef kPolygamma{"polygamma", emit<polygamma>};
const graph::OpDef kIgamma{"igamma", emit<incomplete_gamma<false>>};
const graph::OpDef kIgammac{"igammac", emit<incomplete_gamma<true>>};

}  // namespace torch_pjrt::lowering

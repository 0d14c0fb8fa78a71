// torch.special functions from their mathematical definitions: recurrences, series, continued
// fractions and published rational approximations, with PyTorch's CPU special cases.
#include "lowering/special_functions.h"

#include <cmath>
#include <cstdint>
#include <functional>

#include "lowering/common.h"
#include "lowering/elementwise.h"

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

// ---- Orthogonal polynomials ----------------------------------------------------------------

// The degree as PyTorch's static_cast<int64_t> gives it on x86: NaN and values outside int64
// become INT64_MIN (so the polynomial is 0).
Value degree(const Math& m, Value n) {
  Value bad = either(m, m.isnan(n), m.cmp(Cmp::GE, m.un("abs", n), m.c(9.2233720368547758e18)));
  return m.sel(bad, full(m.b, -9.2233720368547758e18, ElementType::I64, m.dims),
               m.b.convert(n, ElementType::I64));
}

// q_k = step(k, q_{k-2}, q_{k-1}) for k = 2..n, elementwise where `active`; q_0 = p0, q_1 = q0.
// The loop runs to the largest active degree, found on the device.
using Step = std::function<Value(Value k, Value p, Value q)>;
Value recurrence(const Math& m, Value n, Value active, Value p0, Value q0, const Step& step) {
  hlo::Builder& b = m.b;
  const Math mi{b, ElementType::I64, m.dims};
  std::vector<int64_t> all(m.dims.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  Value bound = b.reduce(mi.sel(active, n, mi.c(0)), b.constant_int(0, ElementType::I64), all,
                         hlo::ReduceKind::Max);
  auto out = b.while_loop(
      {b.constant_int(2, ElementType::I64), p0, q0},
      [&](hlo::Builder&, const Operands& c) { return Operands{b.compare(Cmp::LE, c[0], bound)}; },
      [&](hlo::Builder&, const Operands& c) {
        Value k = b.broadcast_in_dim(c[0], m.dims, {});
        Value r = step(b.convert(k, m.t), c[1], c[2]);
        Value live = both(m, active, mi.cmp(Cmp::LE, k, n));
        return Operands{b.binary("add", c[0], b.constant_int(1, ElementType::I64)),
                        m.sel(live, c[2], c[1]), m.sel(live, r, c[2])};
      });
  return out[2];
}

enum class Poly { T, U, V, W, H, He, L, P };

struct PolyParts {
  Value special;  // elements given by `special_value` rather than the recurrence
  Value special_value;
  Value first;  // degree 1
  Step step;
};

// ±v by the parity of the degree.
Value by_parity(const Math& m, Value even, Value v) { return m.sel(even, v, m.un("negate", v)); }

template <Poly K, bool Shifted>
Value polynomial(const Math& m, const Operands& in, const graph::Attrs&) {
  const Math mi{m.b, ElementType::I64, m.dims};
  const Value x = Shifted ? m.sub(m.add(in[0], in[0]), m.c(1)) : in[0];
  const Value n = degree(m, in[1]);
  const Value nf = m.b.convert(n, m.t);
  const Value even = mi.cmp(Cmp::EQ, m.b.binary("remainder", n, mi.c(2)), mi.c(0));
  const Value one = m.c(1), positive = gt(m, x, 0);
  const Value unit = eq(m, m.un("abs", x), 1), inside = lt(m, m.un("abs", x), 1);
  const Value two_x = m.add(x, x);
  const Value n1 = m.add(nf, one), n21 = m.add(m.add(nf, nf), one);
  const Value none = full(m.b, 0, ElementType::Bool, m.dims);
  PolyParts parts;
  // The Chebyshev kinds in closed form: at |x| == 1 exactly, and by angle for |x| < 1 beyond a
  // small degree (6 for T, 8 for the others), as PyTorch's kernels do.
  auto chebyshev = [&](int limit, Value at_unit, Value by_angle) {
    Value large = both(m, inside, mi.cmp(Cmp::GT, n, mi.c(limit)));
    parts.special = either(m, unit, large);
    parts.special_value = m.sel(unit, at_unit, by_angle);
  };
  // acos(x) (NaN outside [-1, 1], where it is not used).
  const Value theta = m.b.binary("atan2", m.un("sqrt", m.mul(m.sub(one, x), m.add(one, x))), x);
  auto chebyshev_step = [&m, two_x](Value, Value p, Value q) { return m.sub(m.mul(two_x, q), p); };
  switch (K) {
    case Poly::T:
      chebyshev(6, m.sel(either(m, positive, even), one, m.c(-1)),
                m.un("cosine", m.mul(nf, theta)));
      parts.first = x;
      parts.step = chebyshev_step;
      break;
    case Poly::U: {
      Value s = m.un("sine", theta), angle = m.mul(n1, theta);
      Value by_angle =
          m.sel(eq(m, s, 0), m.mul(n1, m.un("cosine", angle)), m.div(m.un("sine", angle), s));
      chebyshev(8, m.sel(either(m, positive, even), n1, m.un("negate", n1)), by_angle);
      parts.first = two_x;
      parts.step = chebyshev_step;
      break;
    }
    case Poly::V: {
      Value half = m.mul(theta, m.c(0.5)), angle = m.mul(m.add(nf, m.c(0.5)), theta);
      Value at_unit = m.sel(positive, one, by_parity(m, even, n21));
      Value by_angle = m.sel(eq(m, m.un("sine", half), 1), by_parity(m, even, n21),
                             m.div(m.un("cosine", angle), m.un("cosine", half)));
      chebyshev(8, at_unit, by_angle);
      parts.first = m.sub(two_x, one);
      parts.step = chebyshev_step;
      break;
    }
    case Poly::W: {
      Value half = m.mul(theta, m.c(0.5)), angle = m.mul(m.add(nf, m.c(0.5)), theta);
      Value at_unit = m.sel(positive, n21, by_parity(m, even, one));
      Value by_angle = m.sel(eq(m, m.un("cosine", half), 1), at_unit,
                             m.div(m.un("sine", angle), m.un("sine", half)));
      chebyshev(8, at_unit, by_angle);
      parts.first = m.add(two_x, one);
      parts.step = chebyshev_step;
      break;
    }
    case Poly::H:  // H_k = 2x H_{k-1} - 2(k-1) H_{k-2}
      parts.special = none;
      parts.special_value = one;
      parts.first = two_x;
      parts.step = [&m, two_x](Value k, Value p, Value q) {
        Value k1 = m.sub(k, m.c(1));
        return m.sub(m.mul(two_x, q), m.mul(m.add(k1, k1), p));
      };
      break;
    case Poly::He:  // He_k = x He_{k-1} - (k-1) He_{k-2}
      parts.special = none;
      parts.special_value = one;
      parts.first = x;
      parts.step = [&m, x](Value k, Value p, Value q) {
        return m.sub(m.mul(x, q), m.mul(m.sub(k, m.c(1)), p));
      };
      break;
    case Poly::L:  // L_k = ((2(k-1) + (1 - x)) L_{k-1} - (k-1) L_{k-2}) / k; 1 at x == 0
      parts.special = eq(m, x, 0);
      parts.special_value = one;
      parts.first = m.sub(one, x);
      parts.step = [&m, x](Value k, Value p, Value q) {
        Value k1 = m.sub(k, m.c(1));
        return m.div(m.sub(m.mul(m.add(m.add(k1, k1), m.sub(m.c(1), x)), q), m.mul(k1, p)), k);
      };
      break;
    case Poly::P:  // P_k = ((2k - 1) x P_{k-1} - (k-1) P_{k-2}) / k; ±1 at |x| == 1
      parts.special = unit;
      parts.special_value =
          m.sel(either(m, positive, mi.cmp(Cmp::EQ, n, mi.c(0))), one, by_parity(m, even, one));
      parts.first = x;
      parts.step = [&m, x](Value k, Value p, Value q) {
        Value k1 = m.sub(k, m.c(1));
        return m.div(m.sub(m.mul(m.mul(m.add(m.add(k1, k1), m.c(1)), x), q), m.mul(k1, p)), k);
      };
      break;
  }
  const Value negative = mi.cmp(Cmp::LT, n, mi.c(0));
  const Value active = both(m, mi.cmp(Cmp::GE, n, mi.c(2)), m.un("not", parts.special));
  Value r = recurrence(m, n, active, one, parts.first, parts.step);
  r = m.sel(mi.cmp(Cmp::EQ, n, mi.c(1)), parts.first, r);
  r = m.sel(mi.cmp(Cmp::EQ, n, mi.c(0)), one, r);
  r = m.sel(parts.special, parts.special_value, r);
  return m.sel(negative, m.c(0), r);
}

// ---- Modified Bessel functions of the first kind ---------------------------------------------

// exp(-|x|) I_nu(|x|) for nu = 0 or 1 in f64: sum_k (x/2)^(2k+nu) / (k! (k+nu)!) up to |x| = 30
// (60 terms reach f64 precision there); above, the asymptotic expansion
// e^x / sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4 nu^2 - (2j-1)^2) / (k! (8x)^k), 20 terms.
Value scaled_bessel_i(const Math& m, Value x, int nu) {
  const Value a = m.un("abs", x);
  const Value small = m.cmp(Cmp::LE, a, m.c(30));
  const Value s = m.sel(small, a, m.c(1));  // keeps each branch finite in the other's domain
  const Value y = m.mul(m.mul(s, s), m.c(0.25));
  Value term = nu ? m.mul(s, m.c(0.5)) : m.c(1), sum = term;
  for (int k = 1; k <= 60; ++k) {
    term = m.mul(term, m.div(y, m.c(static_cast<double>(k) * (k + nu))));
    sum = m.add(sum, term);
  }
  Value series = m.mul(sum, m.un("exponential", m.un("negate", a)));
  const Value l = m.sel(small, m.c(31), a);
  const Value inv8x = m.div(m.c(0.125), l);
  Value aterm = m.c(1), asum = aterm;
  for (int k = 1; k <= 20; ++k) {
    const double odd = 2.0 * k - 1;
    aterm = m.mul(aterm, m.mul(inv8x, m.c(-(4.0 * nu * nu - odd * odd) / k)));
    asum = m.add(asum, aterm);
  }
  Value asymptotic = m.mul(asum, m.un("rsqrt", m.mul(l, m.c(2 * M_PI))));
  Value r = m.sel(small, series, asymptotic);
  r = m.sel(m.cmp(Cmp::EQ, a, m.c(INFINITY)), m.c(0), r);
  r = m.sel(m.isnan(x), x, r);
  // I1 is odd.
  return nu ? m.sel(lt(m, x, 0), m.un("negate", r), r) : r;
}

// Unscaled: exp(|x|) times the scaled value (NaN at the infinities, as PyTorch's kernels give).
template <int Nu, bool Scaled>
Value bessel_i_f64(const Math& m, Value x) {
  Value r = scaled_bessel_i(m, x, Nu);
  return Scaled ? r : m.mul(r, m.un("exponential", m.un("abs", x)));
}

// ---- Small elementwise functions -----------------------------------------------------------

Value entr(const Math& m, const Operands& in, const graph::Attrs&) {
  const Value x = in[0];
  Value r = m.sel(gt(m, x, 0), m.un("negate", m.mul(x, m.un("log", x))), m.c(0));
  r = m.sel(lt(m, x, 0), m.c(-INFINITY), r);
  return m.sel(m.isnan(x), x, r);
}

Value magnitude(const Math& m, Value v) { return runtime::is_unsigned(m.t) ? v : m.un("abs", v); }

// Euclid on |a|, |b|: (a, b) <- (b mod a, a) until a is 0 everywhere; the gcd is b.
Value gcd_of(const Math& m, Value a, Value b) {
  hlo::Builder& bl = m.b;
  std::vector<int64_t> all(m.dims.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  auto out = bl.while_loop(
      {magnitude(m, a), magnitude(m, b)},
      [&](hlo::Builder&, const Operands& c) {
        Value pending = m.cmp(Cmp::NE, c[0], m.c(0));
        return Operands{
            bl.reduce(pending, bl.constant_int(0, ElementType::Bool), all, hlo::ReduceKind::Or)};
      },
      [&](hlo::Builder&, const Operands& c) {
        Value zero = m.cmp(Cmp::EQ, c[0], m.c(0));
        Value divisor = m.sel(zero, m.c(1), c[0]);
        Value rest = bl.binary("remainder", c[1], divisor);
        return Operands{m.sel(zero, c[0], rest), m.sel(zero, c[1], c[0])};
      });
  return out[1];
}

Value gcd(const Math& m, const Operands& in, const graph::Attrs&) {
  return gcd_of(m, in[0], in[1]);
}

Value lcm(const Math& m, const Operands& in, const graph::Attrs&) {
  Value g = gcd_of(m, in[0], in[1]);
  Value zero = m.cmp(Cmp::EQ, g, m.c(0));
  Value r = magnitude(m, m.mul(m.div(in[0], m.sel(zero, m.c(1), g)), in[1]));
  return m.sel(zero, m.c(0), r);
}

std::vector<Value> nextafter(hlo::Builder& b, const Operands& in, const graph::Attrs&,
                             const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  const Math m{b, out.dtype, out.dims};
  const Value x = broadcast_to(b, to_type(b, in[0], m.t), m.dims);
  const Value y = broadcast_to(b, to_type(b, in[1], m.t), m.dims);
  const size_t width = runtime::element_size(m.t);
  const ElementType bits_type = width == 8   ? ElementType::I64
                                : width == 4 ? ElementType::I32
                                             : ElementType::I16;
  const Math mi{b, bits_type, m.dims};
  const Value bits = b.bitcast_convert(x, bits_type);
  // Incrementing the bits moves away from zero; toward y is away from zero when y > x > 0 or
  // y < x < 0.
  const Value away = m.cmp(Cmp::EQ, m.cmp(Cmp::GT, y, x), gt(m, x, 0));
  Value r = b.bitcast_convert(mi.sel(away, mi.add(bits, mi.c(1)), mi.sub(bits, mi.c(1))), m.t);
  // From zero: the smallest subnormal with y's sign (the sign bit and 1).
  const double sign_bit = -std::ldexp(1.0, static_cast<int>(8 * width) - 1);
  const Value tiny =
      b.bitcast_convert(mi.sel(gt(m, y, 0), mi.c(1), b.binary("or", mi.c(sign_bit), mi.c(1))), m.t);
  r = m.sel(eq(m, x, 0), tiny, r);
  r = m.sel(m.cmp(Cmp::EQ, x, y), y, r);
  return {m.sel(either(m, m.isnan(x), m.isnan(y)), m.add(x, y), r)};
}

template <MathFn F>
std::vector<Value> emit(hlo::Builder& b, const Operands& in, const graph::Attrs& attrs,
                        const std::vector<hlo::TensorType>& outs) {
  return lower_math(F, b, in, attrs, outs);
}

}  // namespace

const graph::OpDef kChebyshevT{"chebyshev_polynomial_t", emit<polynomial<Poly::T, false>>};
const graph::OpDef kChebyshevU{"chebyshev_polynomial_u", emit<polynomial<Poly::U, false>>};
const graph::OpDef kChebyshevV{"chebyshev_polynomial_v", emit<polynomial<Poly::V, false>>};
const graph::OpDef kChebyshevW{"chebyshev_polynomial_w", emit<polynomial<Poly::W, false>>};
const graph::OpDef kShiftedChebyshevT{"shifted_chebyshev_polynomial_t",
                                      emit<polynomial<Poly::T, true>>};
const graph::OpDef kShiftedChebyshevU{"shifted_chebyshev_polynomial_u",
                                      emit<polynomial<Poly::U, true>>};
const graph::OpDef kShiftedChebyshevV{"shifted_chebyshev_polynomial_v",
                                      emit<polynomial<Poly::V, true>>};
const graph::OpDef kShiftedChebyshevW{"shifted_chebyshev_polynomial_w",
                                      emit<polynomial<Poly::W, true>>};
const graph::OpDef kHermiteH{"hermite_polynomial_h", emit<polynomial<Poly::H, false>>};
const graph::OpDef kHermiteHe{"hermite_polynomial_he", emit<polynomial<Poly::He, false>>};
const graph::OpDef kLaguerreL{"laguerre_polynomial_l", emit<polynomial<Poly::L, false>>};
const graph::OpDef kLegendreP{"legendre_polynomial_p", emit<polynomial<Poly::P, false>>};

const graph::OpDef kI0{"i0", emit<in_f64<bessel_i_f64<0, false>>>};
const graph::OpDef kI0e{"special_i0e", emit<in_f64<bessel_i_f64<0, true>>>};
const graph::OpDef kI1{"special_i1", emit<in_f64<bessel_i_f64<1, false>>>};
const graph::OpDef kI1e{"special_i1e", emit<in_f64<bessel_i_f64<1, true>>>};
const graph::OpDef kNextafter{"nextafter", nextafter};
const graph::OpDef kEntr{"special_entr", emit<entr>};
const graph::OpDef kGcd{"gcd", emit<gcd>};
const graph::OpDef kLcm{"lcm", emit<lcm>};

}  // namespace torch_pjrt::lowering

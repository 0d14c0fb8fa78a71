// Bessel, modified Bessel (second kind), spherical Bessel and Airy functions in f64: power series
// for small arguments, and above them a trapezoid sum of one integral representation (`integral`)
// that serves K, J + iY and, with order 1/3, Ai on both sides of 0.
#include "lowering/bessel_functions.h"

#include <cmath>

#include "lowering/common.h"
#include "lowering/elementwise.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Cmp;
using hlo::Value;

constexpr double kEulerGamma = 0.57721566490153286061;

Value lt(const Math& m, Value x, double v) { return m.cmp(Cmp::LT, x, m.c(v)); }
Value gt(const Math& m, Value x, double v) { return m.cmp(Cmp::GT, x, m.c(v)); }
Value eq(const Math& m, Value x, double v) { return m.cmp(Cmp::EQ, x, m.c(v)); }
Value is_inf(const Math& m, Value x) { return eq(m, m.un("abs", x), INFINITY); }

struct Complex {
  Value re, im;
};

// ---- The integral representation -----------------------------------------------------------

// With C(y) = cosh(2 nu asinh y) / sqrt(1 + y^2), the substitution s = sqrt(2w) sinh(t/2) turns
// K_nu(w) = int_0^inf exp(-w cosh t) cosh(nu t) dt into K_nu(w) = sqrt(pi / (2w)) e^{-w} G(w) with
// G(w) = (2 / sqrt(pi)) int_0^inf exp(-s^2) C(s / sqrt(2w)) ds (G -> 1 as w -> inf). So
//   K_nu(x) = sqrt(pi / (2x)) e^{-x} G(x),
//   J_nu(x) + i Y_nu(x) = H_nu(x) = sqrt(2 / (pi x)) e^{i (x - nu pi/2 - pi/4)} G(-ix),
// the second from H_nu(x) = (2 / (pi i)) e^{-i nu pi/2} K_nu(-ix). The integrand is analytic for
// |Im s| < sqrt(x) (sqrt(2x) for G(x)) and decays like a Gaussian, so the trapezoid rule with
// step h errs by about exp(-2 pi sqrt(x) / h) (exp(2x - 2 pi sqrt(2x) / h) for G(x)): step 1/4
// up to s = 6.5 (exp(-s^2) < 1e-18) gives f64 precision for x >= 2 (1.5 for G(x)).
constexpr double kStep = 0.25;
constexpr int kNodes = 26;

// C at y^2 = a (real w = x).
Value kernel(const Math& m, Value a, double nu) {
  const Value r = m.un("sqrt", m.add(m.c(1), a));
  if (nu == 0) return m.div(m.c(1), r);
  if (nu == 1) return m.div(m.add(m.c(1), m.add(a, a)), r);  // cosh(2 asinh y) = 1 + 2y^2
  // asinh y = log(y + sqrt(1 + y^2)); cosh(2 nu L) from e^{2 nu L}.
  const Value e = m.un("exponential", m.mul(m.un("log", m.add(m.un("sqrt", a), r)), m.c(2 * nu)));
  return m.div(m.mul(m.add(e, m.div(m.c(1), e)), m.c(0.5)), r);
}

// C at y^2 = i a (w = -ix), y = sqrt(a/2) (1 + i).
Complex oscillating_kernel(const Math& m, Value a, double nu) {
  // sqrt(1 + i a) = p + i q without cancellation (p >= 1); 1 / sqrt(1 + i a) = (p - i q) / r.
  const Value r = m.un("sqrt", m.add(m.c(1), m.mul(a, a)));
  const Value p = m.un("sqrt", m.mul(m.add(r, m.c(1)), m.c(0.5)));
  const Value q = m.div(m.mul(a, m.c(0.5)), p);
  if (nu == 0) return {m.div(p, r), m.un("negate", m.div(q, r))};
  if (nu == 1) {
    const Value a2 = m.add(a, a);  // (1 + 2 i a) (p - i q) / r
    return {m.div(m.add(p, m.mul(a2, q)), r), m.div(m.sub(m.mul(a2, p), q), r)};
  }
  // E = y + sqrt(1 + y^2) = rho e^{i phi} (Re E >= 1); cosh(2 nu log E) =
  // ((A + 1/A) cos(2 nu phi) + i (A - 1/A) sin(2 nu phi)) / 2 with A = rho^{2 nu}.
  const Value h = m.un("sqrt", m.mul(a, m.c(0.5)));
  const Value er = m.add(h, p), ei = m.add(h, q);
  const Value angle = m.mul(m.b.binary("atan2", ei, er), m.c(2 * nu));
  const Value big =
      m.un("exponential", m.mul(m.un("log", m.add(m.mul(er, er), m.mul(ei, ei))), m.c(nu)));
  const Value small = m.div(m.c(1), big);
  const Value cr = m.mul(m.mul(m.add(big, small), m.c(0.5)), m.un("cosine", angle));
  const Value ci = m.mul(m.mul(m.sub(big, small), m.c(0.5)), m.un("sine", angle));
  return {m.div(m.add(m.mul(cr, p), m.mul(ci, q)), r), m.div(m.sub(m.mul(ci, p), m.mul(cr, q)), r)};
}

// G(x) (real, in .re) or G(-ix), x > 0.
Complex integral(const Math& m, Value x, double nu, bool oscillating) {
  const Value inv_2x = m.div(m.c(0.5), x);
  Value re = m.c(0), im = m.c(0);
  for (int k = 0; k <= kNodes; ++k) {
    const double s2 = (k * kStep) * (k * kStep);
    const double w = (k == 0 ? 0.5 : 1.0) * kStep * 2 / std::sqrt(M_PI) * std::exp(-s2);
    const Value a = m.mul(inv_2x, m.c(s2));
    if (oscillating) {
      const Complex c = oscillating_kernel(m, a, nu);
      re = m.add(re, m.mul(c.re, m.c(w)));
      im = m.add(im, m.mul(c.im, m.c(w)));
    } else {
      re = m.add(re, m.mul(kernel(m, a, nu), m.c(w)));
    }
  }
  return {re, im};
}

// H_nu(x) / sqrt(2 / (pi x)) = e^{i (x - phase)} G(-ix), with the sine and cosine of x itself.
Complex rotated(const Math& m, Value x, double phase, const Complex& g) {
  const Value cx = m.un("cosine", x), sx = m.un("sine", x);
  const Value c0 = m.c(std::cos(phase)), s0 = m.c(std::sin(phase));
  const Value ct = m.add(m.mul(cx, c0), m.mul(sx, s0)), st = m.sub(m.mul(sx, c0), m.mul(cx, s0));
  return {m.sub(m.mul(ct, g.re), m.mul(st, g.im)), m.add(m.mul(st, g.re), m.mul(ct, g.im))};
}

// ---- Bessel J and Y --------------------------------------------------------------------------

// {J_nu(a), Y_nu(a)} for a = |x| >= 0, nu = 0 or 1: the power series below 3, the integral above.
Complex bessel_jy(const Math& m, Value a, int nu) {
  const Value small = lt(m, a, 3);
  const Value s = m.sel(small, a, m.c(1));  // each branch's argument stays in its own range
  const Value l = m.sel(small, m.c(3), a);
  // J_nu = sum_k (-1)^k (s/2)^(2k+nu) / (k! (k+nu)!); the Y series carries the harmonic numbers:
  // Y0 = (2/pi) ((log(s/2) + gamma) J0 + sum_k (-1)^(k+1) H_k (s/2)^2k / k!^2),
  // Y1 = (2/pi) log(s/2) J1 - 2/(pi s) - (1/pi) sum_k (-1)^k (psi(k+1) + psi(k+2)) (s/2)^(2k+1)
  //      / (k! (k+1)!), with psi(k+1) = H_k - gamma.
  const Value t = m.mul(m.mul(s, s), m.c(0.25));
  Value term = nu ? m.mul(s, m.c(0.5)) : m.c(1), j = term;
  Value y = nu ? m.mul(term, m.c(1 - 2 * kEulerGamma)) : m.c(0);
  double harmonic = 0;
  for (int k = 1; k <= 18; ++k) {
    harmonic += 1.0 / k;
    const double sign = k % 2 ? -1 : 1;
    term = m.mul(term, m.div(t, m.c(static_cast<double>(k) * (k + nu))));
    j = m.add(j, m.mul(term, m.c(sign)));
    const double weight =
        nu ? sign * (2 * harmonic + 1.0 / (k + 1) - 2 * kEulerGamma) : -sign * harmonic;
    y = m.add(y, m.mul(term, m.c(weight)));
  }
  const Value log_half = m.un("log", m.mul(s, m.c(0.5)));
  const Value series_y =
      nu ? m.sub(m.sub(m.mul(m.mul(log_half, j), m.c(2 / M_PI)), m.div(m.c(2 / M_PI), s)),
                 m.mul(y, m.c(1 / M_PI)))
         : m.mul(m.add(m.mul(m.add(log_half, m.c(kEulerGamma)), j), y), m.c(2 / M_PI));
  const Complex h = rotated(m, l, nu * M_PI / 2 + M_PI / 4, integral(m, l, nu, true));
  const Value amp = m.un("sqrt", m.div(m.c(2 / M_PI), l));
  return {m.sel(small, j, m.mul(amp, h.re)), m.sel(small, series_y, m.mul(amp, h.im))};
}

template <int Nu>
Value bessel_j(const Math& m, Value x) {
  Value r = bessel_jy(m, m.un("abs", x), Nu).re;
  if (Nu == 1) r = m.sel(eq(m, x, 0), x, m.sel(lt(m, x, 0), m.un("negate", r), r));  // odd
  return m.sel(is_inf(m, x), m.c(NAN), r);
}

template <int Nu>
Value bessel_y(const Math& m, Value x) {
  Value r = bessel_jy(m, m.un("abs", x), Nu).im;
  r = m.sel(eq(m, x, 0), m.c(-INFINITY), r);
  return m.sel(m.b.binary("or", lt(m, x, 0), is_inf(m, x)), m.c(NAN), r);
}

// ---- Modified Bessel K -----------------------------------------------------------------------

// e^x K_nu(x) for x > 0, nu = 0 or 1: the series below 1.5 (with I_nu's terms t^k (s/2)^nu /
// (k! (k+nu)!), t = s^2/4):
//   K0 = -(log(s/2) + gamma) I0 + sum_k H_k t^k / k!^2,
//   K1 = 1/s + log(s/2) I1 - (1/2) sum_k (psi(k+1) + psi(k+2)) t^k (s/2) / (k! (k+1)!),
// and the integral above.
Value scaled_k(const Math& m, Value x, int nu) {
  const Value small = lt(m, x, 1.5);
  const Value s = m.sel(small, x, m.c(1));
  const Value l = m.sel(small, m.c(1.5), x);
  const Value t = m.mul(m.mul(s, s), m.c(0.25));
  Value term = nu ? m.mul(s, m.c(0.5)) : m.c(1), i = term;
  Value sum = nu ? m.mul(term, m.c(1 - 2 * kEulerGamma)) : m.c(0);
  double harmonic = 0;
  for (int k = 1; k <= 14; ++k) {
    harmonic += 1.0 / k;
    term = m.mul(term, m.div(t, m.c(static_cast<double>(k) * (k + nu))));
    i = m.add(i, term);
    const double weight = nu ? 2 * harmonic + 1.0 / (k + 1) - 2 * kEulerGamma : harmonic;
    sum = m.add(sum, m.mul(term, m.c(weight)));
  }
  const Value log_half = m.un("log", m.mul(s, m.c(0.5)));
  Value series = nu ? m.sub(m.add(m.div(m.c(1), s), m.mul(log_half, i)), m.mul(sum, m.c(0.5)))
                    : m.sub(sum, m.mul(m.add(log_half, m.c(kEulerGamma)), i));
  series = m.mul(series, m.un("exponential", s));
  const Value large = m.mul(m.un("sqrt", m.div(m.c(M_PI / 2), l)), integral(m, l, nu, false).re);
  return m.sel(small, series, large);
}

template <int Nu, bool Scaled>
Value bessel_k(const Math& m, Value x) {
  Value r = scaled_k(m, x, Nu);
  if (!Scaled) r = m.mul(r, m.un("exponential", m.un("negate", x)));
  r = m.sel(eq(m, x, 0), m.c(INFINITY), r);
  return m.sel(lt(m, x, 0), m.c(NAN), r);
}

// ---- Spherical j0 and Airy Ai ----------------------------------------------------------------

Value spherical_j0(const Math& m, Value x) {
  const Value x2 = m.mul(x, x);
  const Value near_zero = lt(m, m.un("abs", x), 1e-4);  // 1 - x^2/6 + x^4/120 is f64-exact there
  const Value series = m.add(m.c(1), m.mul(x2, m.add(m.c(-1.0 / 6), m.mul(x2, m.c(1.0 / 120)))));
  const Value r = m.sel(near_zero, series, m.div(m.un("sine", x), x));
  return m.sel(is_inf(m, x), m.c(0), r);
}

// Ai(x): the Maclaurin series Ai(0) f(x) + Ai'(0) g(x) on [-2.5, 1.5]; above, Ai(x) = (1/pi)
// sqrt(x/3) K_{1/3}(z) = e^{-z} G(z) / (2 sqrt(pi) x^{1/4}); below, Ai(-x) = (sqrt(x)/2)
// (J_{1/3}(z) - Y_{1/3}(z) / sqrt(3)); z = (2/3) |x|^{3/2}.
Value airy_ai(const Math& m, Value x) {
  const double ai0 = 0.35502805388781723926, dai0 = -0.25881940379280679840;
  const Value middle = m.b.binary("and", m.cmp(Cmp::GE, x, m.c(-2.5)), m.cmp(Cmp::LE, x, m.c(1.5)));
  const Value s = m.sel(middle, x, m.c(0));
  const Value cube = m.mul(m.mul(s, s), s);
  // f = sum_k 3^k (1/3)_k x^3k / (3k)!, g = sum_k 3^k (2/3)_k x^(3k+1) / (3k+1)!.
  Value tf = m.c(1), f = tf, tg = s, g = tg;
  for (int k = 1; k <= 20; ++k) {
    tf = m.mul(tf, m.div(cube, m.c((3.0 * k - 1) * (3.0 * k))));
    tg = m.mul(tg, m.div(cube, m.c((3.0 * k) * (3.0 * k + 1))));
    f = m.add(f, tf);
    g = m.add(g, tg);
  }
  const Value series = m.add(m.mul(f, m.c(ai0)), m.mul(g, m.c(dai0)));
  auto zeta = [&m](Value a) { return m.mul(m.mul(a, m.un("sqrt", a)), m.c(2.0 / 3)); };
  auto quarter = [&m](Value a) { return m.un("rsqrt", m.un("sqrt", a)); };  // a^(-1/4)
  const Value positive = gt(m, x, 1.5);
  const Value a = m.sel(positive, x, m.c(2)), za = zeta(a);
  const Value above =
      m.mul(m.mul(integral(m, za, 1.0 / 3, false).re, m.un("exponential", m.un("negate", za))),
            m.mul(quarter(a), m.c(0.5 / std::sqrt(M_PI))));
  const Value b = m.sel(lt(m, x, -2.5), m.un("negate", x), m.c(3)), zb = zeta(b);
  const Complex h = rotated(m, zb, M_PI / 6 + M_PI / 4, integral(m, zb, 1.0 / 3, true));
  // (sqrt(x)/2) sqrt(2 / (pi z)) = sqrt(3 / pi) x^{-1/4} / 2.
  const Value below = m.mul(m.sub(h.re, m.mul(h.im, m.c(1 / std::sqrt(3.0)))),
                            m.mul(quarter(b), m.c(0.5 * std::sqrt(3 / M_PI))));
  Value r = m.sel(middle, series, m.sel(positive, above, below));
  r = m.sel(is_inf(m, x), m.c(NAN), r);
  return m.sel(m.isnan(x), x, r);
}

template <MathFn F>
std::vector<Value> emit(hlo::Builder& b, const std::vector<Value>& in, const graph::Attrs& attrs,
                        const std::vector<hlo::TensorType>& outs) {
  return lower_math(F, b, in, attrs, outs);
}

}  // namespace

const graph::OpDef kBesselJ0{"special_bessel_j0", emit<in_f64<bessel_j<0>>>};
const graph::OpDef kBesselJ1{"special_bessel_j1", emit<in_f64<bessel_j<1>>>};
const graph::OpDef kBesselY0{"special_bessel_y0", emit<in_f64<bessel_y<0>>>};
const graph::OpDef kBesselY1{"special_bessel_y1", emit<in_f64<bessel_y<1>>>};
const graph::OpDef kModifiedBesselK0{"special_modified_bessel_k0",
                                     emit<in_f64<bessel_k<0, false>>>};
const graph::OpDef kModifiedBesselK1{"special_modified_bessel_k1",
                                     emit<in_f64<bessel_k<1, false>>>};
const graph::OpDef kScaledModifiedBesselK0{"special_scaled_modified_bessel_k0",
                                           emit<in_f64<bessel_k<0, true>>>};
const graph::OpDef kScaledModifiedBesselK1{"special_scaled_modified_bessel_k1",
                                           emit<in_f64<bessel_k<1, true>>>};
const graph::OpDef kSphericalBesselJ0{"special_spherical_bessel_j0", emit<in_f64<spherical_j0>>};
const graph::OpDef kAiryAi{"special_airy_ai", emit<in_f64<airy_ai>>};

}  // namespace torch_pjrt::lowering

// Complex lowerings of the unary math StableHLO has no complex op for: the inverse trigonometric
// and hyperbolic functions, sinh/cosh, log2/log10 and exp2, on principal branches (those of C++'s
// std::complex functions, which PyTorch's CPU kernels call). Written on StableHLO's complex ops
// (log, log_plus_one, sqrt, exponential) in forms without cancellation for small arguments.
#include <cmath>
#include <string_view>

#include "lowering/common.h"
#include "lowering/complex.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Value;
using Values = std::vector<Value>;
using Types = std::vector<hlo::TensorType>;

struct Parts {
  Value re, im;
};

Parts parts(hlo::Builder& b, Value z) { return {b.unary("real", z), b.unary("imag", z)}; }
Value make(hlo::Builder& b, Value re, Value im) { return b.complex(re, im); }
Value real_full(hlo::Builder& b, double v, Value like) {
  return full(b, v, like.type.dtype, like.type.dims);
}
// i * z and -i * z.
Value times_i(hlo::Builder& b, Value z) {
  const Parts p = parts(b, z);
  return make(b, b.unary("negate", p.im), p.re);
}
Value times_minus_i(hlo::Builder& b, Value z) {
  const Parts p = parts(b, z);
  return make(b, p.im, b.unary("negate", p.re));
}
Value scale(hlo::Builder& b, Value z, double k) {
  const Parts p = parts(b, z);
  const Value kk = real_full(b, k, p.re);
  return make(b, b.binary("multiply", p.re, kk), b.binary("multiply", p.im, kk));
}

// |mag| with the sign bit of `sign` (-0 and NaN signs included).
Value copysign(hlo::Builder& b, Value mag, Value sign) {
  const hlo::ElementType bits =
      sign.type.dtype == hlo::ElementType::F64 ? hlo::ElementType::I64 : hlo::ElementType::I32;
  const Value negative = b.compare(hlo::Cmp::LT, b.bitcast_convert(sign, bits),
                                   b.splat(0, hlo::TensorType{bits, sign.type.dims}));
  const Value a = b.unary("abs", mag);
  return b.select(negative, b.unary("negate", a), a);
}

// f (odd, f(conj z) = conj f(z), first quadrant to first quadrant: asinh, atanh) from its values
// on the first quadrant: the result's parts take the signs of z's. So the side of a branch cut a
// signed zero names is kept (asinh(0 - 2i) = 1.317 - 1.571i, asinh(-0 - 2i) = -1.317 - 1.571i),
// which the formulas' rounding would not.
Value by_quadrant(hlo::Builder& b, Value z, Value (*f)(hlo::Builder&, Value)) {
  const Parts p = parts(b, z);
  const Parts r = parts(b, f(b, make(b, b.unary("abs", p.re), b.unary("abs", p.im))));
  return make(b, copysign(b, r.re, p.re), copysign(b, r.im, p.im));
}

// asinh(s) = log1p(s + s^2 / (1 + sqrt(1 + s^2))) for s in the first quadrant, where neither the
// sum nor the log cancels.
Value asinh_first_quadrant(hlo::Builder& b, Value s) {
  const Value one = full(b, 1, s.type.dtype, s.type.dims);
  const Value s2 = b.binary("multiply", s, s);
  const Value root = b.unary("sqrt", b.binary("add", one, s2));
  return b.unary("log_plus_one",
                 b.binary("add", s, b.binary("divide", s2, b.binary("add", one, root))));
}
Value asinh_of(hlo::Builder& b, Value z) { return by_quadrant(b, z, asinh_first_quadrant); }

// atanh(x + iy) on the first quadrant: Re = log(|1 + z| / |1 - z|) / 2, as log1p(4x / |1 - z|^2)
// / 4 (no cancellation for small z) unless |1 - z|^2 is small (near the pole at 1, where it could
// underflow: there the quotient of magnitudes, which complex abs scales); Im = atan2(2y,
// (1 - x)(1 + x) - y^2) / 2.
Value atanh_first_quadrant(hlo::Builder& b, Value z) {
  const Parts p = parts(b, z);
  const Value one = real_full(b, 1, p.re);
  const Value one_minus_x = b.binary("subtract", one, p.re);
  const Value d = b.binary("add", b.binary("multiply", one_minus_x, one_minus_x),
                           b.binary("multiply", p.im, p.im));
  const Value by_log1p =
      b.binary("multiply", real_full(b, 0.25, p.re),
               b.unary("log_plus_one",
                       b.binary("divide", b.binary("multiply", real_full(b, 4, p.re), p.re), d)));
  const Value near_pole = b.compare(hlo::Cmp::LT, d, real_full(b, 0.5, p.re));
  const Value by_ratio =
      b.binary("multiply", real_full(b, 0.5, p.re),
               b.binary("subtract",
                        b.unary("log", b.unary("abs", make(b, b.binary("add", one, p.re), p.im))),
                        b.unary("log", b.unary("abs", make(b, one_minus_x, p.im)))));
  const Value re = b.select(near_pole, by_ratio, by_log1p);
  const Value denominator =
      b.binary("subtract", b.binary("multiply", one_minus_x, b.binary("add", one, p.re)),
               b.binary("multiply", p.im, p.im));
  const Value im = b.binary("multiply", real_full(b, 0.5, p.re),
                            b.binary("atan2", b.binary("add", p.im, p.im), denominator));
  return make(b, re, im);
}
Value atanh_of(hlo::Builder& b, Value z) { return by_quadrant(b, z, atanh_first_quadrant); }

// asin(z) = -i asinh(i z).
Value asin_of(hlo::Builder& b, Value z) { return times_minus_i(b, asinh_of(b, times_i(b, z))); }

// acos(z) = pi/2 - asin(z). Its imaginary part is -Im asin(z) for complex64, as C's cacos; for
// complex128 the CPU's kernel subtracts from +0, so the segment [-1, 1] gets +0 for both signs of
// z's zero imaginary part.
Value acos_of(hlo::Builder& b, Value z) {
  const Parts a = parts(b, asin_of(b, z));
  const Value im = z.type.dtype == hlo::ElementType::C128
                       ? b.binary("subtract", real_full(b, 0, a.im), a.im)
                       : b.unary("negate", a.im);
  return make(b, b.binary("subtract", real_full(b, M_PI / 2, a.re), a.re), im);
}

Values unary(Value (*f)(hlo::Builder&, Value), hlo::Builder& b, const Values& in,
             const Types& outs) {
  return {f(b, to_type(b, in[0], outs[0].dtype))};
}

Values emit_asinh(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(asinh_of, b, in, outs);
}
Values emit_asin(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(asin_of, b, in, outs);
}
Values emit_acos(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(acos_of, b, in, outs);
}
Values emit_atanh(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(atanh_of, b, in, outs);
}
// atan(z) = -i atanh(i z).
Values emit_atan(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(
      [](hlo::Builder& b, Value z) { return times_minus_i(b, atanh_of(b, times_i(b, z))); }, b, in,
      outs);
}

// acosh(z) = +-i acos(z): |Im acos z| + i Re(acos z) with the sign of Im z (acosh's real part is
// non-negative and acosh(conj z) = conj acosh(z)).
Values emit_acosh(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(
      [](hlo::Builder& b, Value z) {
        const Parts a = parts(b, acos_of(b, z));
        return make(b, b.unary("abs", a.im), copysign(b, a.re, b.unary("imag", z)));
      },
      b, in, outs);
}

// sqrt(z) from StableHLO's sqrt, the imaginary part given the sign of z's (which XLA drops for a
// zero imaginary part): sqrt(-4 - 0i) = -2i, sqrt(0.5 - 0i) = 0.707 - 0i, as C's csqrt.
Values emit_sqrt(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(
      [](hlo::Builder& b, Value z) {
        const Parts r = parts(b, b.unary("sqrt", z));
        return make(b, r.re, copysign(b, r.im, b.unary("imag", z)));
      },
      b, in, outs);
}

// log1p(x + iy) = log|1 + z| + i atan2(y, 1 + x), the magnitude's log as log1p(x (2 + x) + y^2) / 2
// for |z| < 1/2 (x itself when that sum underflows to 0, so log1p(-0) is -0) and as log of the
// scaled magnitude |1 + z| beyond (no underflow near -1).
Values emit_log1p(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(
      [](hlo::Builder& b, Value z) {
        const Parts p = parts(b, z);
        const Value one = real_full(b, 1, p.re);
        const Value x1 = b.binary("add", one, p.re);
        const Value theta = b.binary("atan2", p.im, x1);
        const Value r = b.binary("add", b.binary("multiply", p.re, b.binary("add", one, x1)),
                                 b.binary("multiply", p.im, p.im));
        Value small = b.binary("multiply", real_full(b, 0.5, p.re), b.unary("log_plus_one", r));
        small = b.select(b.compare(hlo::Cmp::EQ, r, real_full(b, 0, r)), p.re, small);
        const Value large = b.unary("log", b.unary("abs", make(b, x1, p.im)));
        const Value is_small = b.compare(hlo::Cmp::LT, b.unary("abs", z), real_full(b, 0.5, p.re));
        return make(b, b.select(is_small, small, large), theta);
      },
      b, in, outs);
}

// exp, expm1 and tanh (real on the real axis, f(conj z) = conj f(z)) from StableHLO's ops, the
// zero imaginary part of a result on the real axis given the sign of z's (exp(0.5 - 0i) =
// 1.649 - 0i, as C's cexp), which XLA's ops do not keep.
template <const char* Op>
Values emit_real_on_real_axis(hlo::Builder& b, const Values& in, const graph::Attrs&,
                              const Types& outs) {
  const Value z = to_type(b, in[0], outs[0].dtype);
  const Parts p = parts(b, z);
  const Value fz = b.unary(Op, z);
  const Parts r = parts(b, fz);
  const Value zero = real_full(b, 0, p.im);
  const Value on_axis =
      b.binary("and", b.compare(hlo::Cmp::EQ, p.im, zero),
               b.compare(hlo::Cmp::LT, b.unary("abs", p.re), real_full(b, INFINITY, p.re)));
  const Value fixed = make(b, r.re, b.select(on_axis, copysign(b, r.im, p.im), r.im));
  if (std::string_view(Op) != "exponential_minus_one") return {fixed};
  // expm1(+-0 +-0i) is z itself (expm1(-0) = -0)
  const Value at_zero =
      b.binary("and", b.compare(hlo::Cmp::EQ, p.re, zero), b.compare(hlo::Cmp::EQ, p.im, zero));
  return {b.select(at_zero, z, fixed)};
}
constexpr char kExponential[] = "exponential";
constexpr char kExponentialMinusOne[] = "exponential_minus_one";
constexpr char kTanh[] = "tanh";

// 1 / z as PyTorch's complex division computes it (c10::complex, after numpy): scaled by the part
// of larger magnitude, (1 - rat i) / (c + d rat) with rat = d / c when |c| >= |d|, else
// (rat - i) / (d + c rat) with rat = c / d; 1 / 0 is inf + nan i. So the signs of zero parts are
// the CPU's (1 / (0.5 + 0i) = 2 + 0i, where 1 times the conjugate over |z|^2 gives 2 - 0i).
Value reciprocal_of(hlo::Builder& b, Value z) {
  const Parts p = parts(b, z);
  const Value one = real_full(b, 1, p.re), zero = real_full(b, 0, p.re);
  const Value ac = b.unary("abs", p.re), ad = b.unary("abs", p.im);
  const Value rat_c = b.binary("divide", p.im, p.re);
  const Value scl_c =
      b.binary("divide", one, b.binary("add", p.re, b.binary("multiply", p.im, rat_c)));
  const Value rat_d = b.binary("divide", p.re, p.im);
  const Value scl_d =
      b.binary("divide", one, b.binary("add", p.im, b.binary("multiply", p.re, rat_d)));
  const Value c_larger = b.compare(hlo::Cmp::GE, ac, ad);
  const Value both_zero =
      b.binary("and", b.compare(hlo::Cmp::EQ, ac, zero), b.compare(hlo::Cmp::EQ, ad, zero));
  // rat + 0 (which turns -0 into +0; XLA may fold a literal "+ 0" away)
  const Value rat_d_plus_0 = b.select(b.compare(hlo::Cmp::EQ, rat_d, zero), zero, rat_d);
  Value re = b.select(c_larger, scl_c, b.binary("multiply", rat_d_plus_0, scl_d));
  Value im = b.select(
      c_larger, b.binary("multiply", b.binary("subtract", zero, rat_c), scl_c),
      b.binary("multiply", b.binary("subtract", b.binary("multiply", zero, rat_d), one), scl_d));
  re = b.select(both_zero, b.binary("divide", one, ac), re);
  im = b.select(both_zero, b.binary("divide", zero, ad), im);
  return make(b, re, im);
}

Values emit_reciprocal(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(reciprocal_of, b, in, outs);
}

// rsqrt(z) = 1 / sqrt(z), both as the CPU computes them.
Values emit_rsqrt(hlo::Builder& b, const Values& in, const graph::Attrs& a, const Types& outs) {
  return {reciprocal_of(b, emit_sqrt(b, in, a, outs)[0])};
}

// sinh(x + iy) = sinh x cos y + i cosh x sin y; cosh(x + iy) = cosh x cos y + i sinh x sin y,
// with sinh x = (expm1(x) - expm1(-x)) / 2 (no cancellation near 0).
template <bool Sinh>
Values emit_sinh_cosh(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  const Value z = to_type(b, in[0], outs[0].dtype);
  const Parts p = parts(b, z);
  const Value half = real_full(b, 0.5, p.re);
  const Value sh = b.binary("multiply", half,
                            b.binary("subtract", b.unary("exponential_minus_one", p.re),
                                     b.unary("exponential_minus_one", b.unary("negate", p.re))));
  const Value ch = b.binary("multiply", half,
                            b.binary("add", b.unary("exponential", p.re),
                                     b.unary("exponential", b.unary("negate", p.re))));
  const Value c = b.unary("cosine", p.im), s = b.unary("sine", p.im);
  return {Sinh ? make(b, b.binary("multiply", sh, c), b.binary("multiply", ch, s))
               : make(b, b.binary("multiply", ch, c), b.binary("multiply", sh, s))};
}

// log_base(z) = log(z) / ln(base).
template <int Base>
Values emit_log_base(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return {scale(b, b.unary("log", to_type(b, in[0], outs[0].dtype)), 1.0 / std::log(Base))};
}

// exp2(z) = exp(z ln 2).
Values emit_exp2(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return {b.unary("exponential", scale(b, to_type(b, in[0], outs[0].dtype), M_LN2))};
}

// logaddexp(a, b) = m + log1p(exp(o - m)), m the operand with the larger real part (CPU
// PyTorch's choice); m itself when its real part is -inf (both are then -inf + ...).
Values emit_logaddexp(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  const hlo::TensorType& out = outs[0];
  const Value x = broadcast_to(b, to_type(b, in[0], out.dtype), out.dims);
  const Value y = broadcast_to(b, to_type(b, in[1], out.dtype), out.dims);
  const Value xr = b.unary("real", x), yr = b.unary("real", y);
  const Value x_larger = b.compare(hlo::Cmp::GE, xr, yr);
  const Value m = b.select(x_larger, x, y), o = b.select(x_larger, y, x);
  const Value r = b.binary(
      "add", m, b.unary("log_plus_one", b.unary("exponential", b.binary("subtract", o, m))));
  const Value mr = b.unary("real", m);
  return {b.select(b.compare(hlo::Cmp::EQ, mr, real_full(b, -INFINITY, mr)), m, r)};
}

}  // namespace

const graph::OpDef kComplexLogaddexp{"complex_logaddexp", emit_logaddexp};
const graph::OpDef kComplexAsin{"complex_asin", emit_asin};
const graph::OpDef kComplexAcos{"complex_acos", emit_acos};
const graph::OpDef kComplexAtan{"complex_atan", emit_atan};
const graph::OpDef kComplexAsinh{"complex_asinh", emit_asinh};
const graph::OpDef kComplexAcosh{"complex_acosh", emit_acosh};
const graph::OpDef kComplexAtanh{"complex_atanh", emit_atanh};
const graph::OpDef kComplexSinh{"complex_sinh", emit_sinh_cosh<true>};
const graph::OpDef kComplexCosh{"complex_cosh", emit_sinh_cosh<false>};
const graph::OpDef kComplexLog2{"complex_log2", emit_log_base<2>};
const graph::OpDef kComplexLog10{"complex_log10", emit_log_base<10>};
const graph::OpDef kComplexExp2{"complex_exp2", emit_exp2};
const graph::OpDef kComplexSqrt{"complex_sqrt", emit_sqrt};
const graph::OpDef kComplexLog1p{"complex_log1p", emit_log1p};
const graph::OpDef kComplexExp{"complex_exp", emit_real_on_real_axis<kExponential>};
const graph::OpDef kComplexExpm1{"complex_expm1", emit_real_on_real_axis<kExponentialMinusOne>};
const graph::OpDef kComplexTanh{"complex_tanh", emit_real_on_real_axis<kTanh>};
const graph::OpDef kComplexReciprocal{"complex_reciprocal", emit_reciprocal};
const graph::OpDef kComplexRsqrt{"complex_rsqrt", emit_rsqrt};

}  // namespace torch_pjrt::lowering

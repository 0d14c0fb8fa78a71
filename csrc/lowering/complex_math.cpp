// Complex lowerings of the unary math StableHLO has no complex op for: the inverse trigonometric
// and hyperbolic functions, sinh/cosh, log2/log10 and exp2, on principal branches (those of C++'s
// std::complex functions, which PyTorch's CPU kernels call). Written on StableHLO's complex ops
// (log, log_plus_one, sqrt, exponential) in forms without cancellation for small arguments.
#include <cmath>

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

// asinh(z) = log1p(s + s^2 / (1 + sqrt(1 + s^2))) for s = z folded into Re >= 0 (asinh is odd),
// where neither the sum nor the log cancels.
Value asinh_of(hlo::Builder& b, Value z) {
  const Parts p = parts(b, z);
  const Value zero = real_full(b, 0, p.re);
  const Value flip = b.compare(hlo::Cmp::LT, p.re, zero);
  const Value s = b.select(flip, b.unary("negate", z), z);
  const Value one = full(b, 1, z.type.dtype, z.type.dims);
  const Value s2 = b.binary("multiply", s, s);
  const Value root = b.unary("sqrt", b.binary("add", one, s2));
  const Value r = b.unary("log_plus_one",
                          b.binary("add", s, b.binary("divide", s2, b.binary("add", one, root))));
  return b.select(flip, b.unary("negate", r), r);
}

// atanh(z) = (log1p(z) - log1p(-z)) / 2.
Value atanh_of(hlo::Builder& b, Value z) {
  const Value d = b.binary("subtract", b.unary("log_plus_one", z),
                           b.unary("log_plus_one", b.unary("negate", z)));
  return scale(b, d, 0.5);
}

// asin(z) = -i asinh(i z).
Value asin_of(hlo::Builder& b, Value z) { return times_minus_i(b, asinh_of(b, times_i(b, z))); }

// acos(z) = pi/2 - asin(z).
Value acos_of(hlo::Builder& b, Value z) {
  const Parts a = parts(b, asin_of(b, z));
  return make(b, b.binary("subtract", real_full(b, M_PI / 2, a.re), a.re), b.unary("negate", a.im));
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

// acosh(z) = i acos(z) or -i acos(z), whichever has a non-negative real part.
Values emit_acosh(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return unary(
      [](hlo::Builder& b, Value z) {
        const Value a = acos_of(b, z);
        const Value im = b.unary("imag", a);
        return b.select(b.compare(hlo::Cmp::LE, im, real_full(b, 0, im)), times_i(b, a),
                        times_minus_i(b, a));
      },
      b, in, outs);
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

}  // namespace torch_pjrt::lowering

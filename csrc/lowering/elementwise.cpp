// Elementwise lowerings: arithmetic, comparisons, where, unary math, bitwise and logical ops.
#include "lowering/elementwise.h"

#include <cmath>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

hlo::ElementType compute_type(const graph::Attrs& attrs, const hlo::TensorType& out) {
  return attrs.ints.empty() ? out.dtype : static_cast<hlo::ElementType>(attrs.ints[0]);
}

// Both operands converted to the compute type and broadcast to the output dims.
std::pair<hlo::Value, hlo::Value> prepare(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                          hlo::ElementType t, const std::vector<int64_t>& dims) {
  return {broadcast_to(b, to_type(b, in[0], t), dims), broadcast_to(b, to_type(b, in[1], t), dims)};
}

template <const char* Op>
std::vector<hlo::Value> emit_binary(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                    const graph::Attrs& attrs,
                                    const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  const hlo::ElementType t = compute_type(attrs, out);
  auto [x, y] = prepare(b, in, t, out.dims);
  if (in.size() == 3) y = b.binary("multiply", y, broadcast_to(b, to_type(b, in[2], t), out.dims));
  return {to_type(b, b.binary(Op, x, y), out.dtype)};
}

template <hlo::Cmp Direction>
std::vector<hlo::Value> emit_compare(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                     const graph::Attrs& attrs,
                                     const std::vector<hlo::TensorType>& outs) {
  auto [x, y] = prepare(b, in, static_cast<hlo::ElementType>(attrs.ints.at(0)), outs[0].dims);
  return {b.compare(Direction, x, y)};
}

std::vector<hlo::Value> emit_where(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                   const graph::Attrs&, const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  hlo::Value cond = broadcast_to(b, in[0], out.dims);
  auto [x, y] = prepare(b, {in[1], in[2]}, out.dtype, out.dims);
  return {b.select(cond, x, y)};
}

// float16/bfloat16 compute in float32 and round once, as the CPU's kernels do (XLA:CPU's float16
// logistic was one ulp off).
template <const char* Op>
std::vector<hlo::Value> emit_unary(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                   const graph::Attrs&, const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = outs[0].dtype;
  return {to_type(b, b.unary(Op, to_type(b, in[0], math_type(t))), t)};
}

// ceil and floor of an integer are the integer itself.
template <const char* Op>
std::vector<hlo::Value> emit_rounding(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                      const graph::Attrs& attrs,
                                      const std::vector<hlo::TensorType>& outs) {
  if (!runtime::is_floating(outs[0].dtype)) return {to_type(b, in[0], outs[0].dtype)};
  return emit_unary<Op>(b, in, attrs, outs);
}

// max(x, 0) would turn NaN into 0 on some backends; select keeps PyTorch's NaN propagation.
std::vector<hlo::Value> emit_relu(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                  const graph::Attrs&, const std::vector<hlo::TensorType>& outs) {
  hlo::Value x = to_type(b, in[0], outs[0].dtype);
  hlo::Value zero = full(b, 0, outs[0].dtype, outs[0].dims);
  return {b.select(b.compare(hlo::Cmp::LT, x, zero), zero, x)};
}

std::vector<hlo::Value> emit_threshold_backward(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                                const graph::Attrs& attrs,
                                                const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  auto [grad, self] = prepare(b, in, out.dtype, out.dims);
  hlo::Value threshold = full(b, attrs.floats.at(0), out.dtype, out.dims);
  hlo::Value zero = full(b, 0, out.dtype, out.dims);
  return {b.select(b.compare(hlo::Cmp::LE, self, threshold), zero, grad)};
}

using hlo::Cmp;
using hlo::ElementType;
using hlo::Value;
using Operands = std::vector<Value>;

bool is_float(const Math& m) { return runtime::is_floating(m.t); }
Value nonzero(const Math& m, Value x) { return m.cmp(Cmp::NE, x, m.c(0)); }
Value negative(const Math& m, Value x) { return m.cmp(Cmp::LT, x, m.c(0)); }
Value both(const Math& m, Value p, Value q) { return m.b.binary("and", p, q); }
Value differ(const Math& m, Value p, Value q) { return m.b.binary("xor", p, q); }

template <Value (*F)(const Math&, const Operands&, const graph::Attrs&)>
std::vector<Value> emit_math(hlo::Builder& b, const Operands& in, const graph::Attrs& attrs,
                             const std::vector<hlo::TensorType>& outs) {
  return lower_math(F, b, in, attrs, outs);
}

// x - trunc(x / y) * y, then moved into the divisor's sign as Python's % does.
Value remainder(const Math& m, const Operands& x, const graph::Attrs&) {
  Value mod = m.b.binary("remainder", x[0], x[1]);
  Value fix = both(m, nonzero(m, mod), differ(m, negative(m, x[1]), negative(m, mod)));
  return m.sel(fix, m.add(mod, x[1]), mod);
}

// NaN-propagating, unlike the plugin's maximum/minimum.
Value maximum(const Math& m, const Operands& x, const graph::Attrs&) { return m.max(x[0], x[1]); }
Value minimum(const Math& m, const Operands& x, const graph::Attrs&) { return m.min(x[0], x[1]); }

Value fmod(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.b.binary("remainder", x[0], x[1]);
}

// PyTorch's div_floor: integer division rounding down; for floats its fmod-based formula, which
// keeps the result consistent with remainder.
Value floor_divide(const Math& m, const Operands& x, const graph::Attrs&) {
  Value mod = m.b.binary("remainder", x[0], x[1]);
  Value fix = both(m, nonzero(m, mod), differ(m, negative(m, x[1]), negative(m, mod)));
  if (!is_float(m)) {
    Value q = m.div(x[0], x[1]);
    return m.sel(fix, m.sub(q, m.c(1)), q);
  }
  Value div = m.div(m.sub(x[0], mod), x[1]);
  div = m.sel(fix, m.sub(div, m.c(1)), div);
  Value floored = m.un("floor", div);
  floored = m.sel(m.cmp(Cmp::GT, m.sub(div, floored), m.c(0.5)), m.add(floored, m.c(1)), floored);
  Value quotient = m.div(x[0], x[1]);
  Value signed_zero = m.mul(quotient, m.c(0));
  Value result = m.sel(nonzero(m, div), floored, signed_zero);
  return m.sel(m.cmp(Cmp::EQ, x[1], m.c(0)), quotient, result);
}

Value trunc_divide(const Math& m, const Operands& x, const graph::Attrs&) {
  Value q = m.div(x[0], x[1]);
  return is_float(m) ? m.trunc(q) : q;
}

Value pow(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.b.binary("power", x[0], x[1]);
}

Value atan2(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.b.binary("atan2", x[0], x[1]);
}

template <bool Max>
Value fmax(const Math& m, const Operands& x, const graph::Attrs&) {
  Value r = Max ? m.max(x[0], x[1]) : m.min(x[0], x[1]);
  if (!is_float(m)) return r;
  return m.sel(m.isnan(x[0]), x[1], m.sel(m.isnan(x[1]), x[0], r));
}

template <const char* Op>
Value logical(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.b.binary(Op, nonzero(m, x[0]), nonzero(m, x[1]));
}

Value clamp(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.min(m.max(x[0], x[1]), x[2]);
}
Value clamp_min(const Math& m, const Operands& x, const graph::Attrs&) { return m.max(x[0], x[1]); }
Value clamp_max(const Math& m, const Operands& x, const graph::Attrs&) { return m.min(x[0], x[1]); }

// PyTorch's two-sided formula, exact at weight 0 and 1.
Value lerp(const Math& m, const Operands& x, const graph::Attrs&) {
  Value diff = m.sub(x[1], x[0]);
  Value magnitude = m.un("abs", x[2]);  // real for a complex weight
  Value small = m.cmp(Cmp::LT, magnitude, full(m.b, 0.5, magnitude.type.dtype, m.dims));
  return m.sel(small, m.add(x[0], m.mul(x[2], diff)),
               m.sub(x[1], m.mul(diff, m.sub(m.c(1), x[2]))));
}

template <bool Divide>
Value addc(const Math& m, const Operands& x, const graph::Attrs&) {
  Value scaled = m.mul(x[3], x[1]);
  return m.add(x[0], Divide ? m.div(scaled, x[2]) : m.mul(scaled, x[2]));
}

Value logical_not(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.cmp(Cmp::EQ, x[0], m.c(0));
}

Value bitwise_not(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.un("not", x[0]);
}

Value is_nan(const Math& m, const Operands& x, const graph::Attrs&) { return m.isnan(x[0]); }

Value nan_to_num(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  if (!is_float(m)) return x[0];
  const std::vector<double>& f = attrs.floats;
  Value r = m.sel(m.cmp(Cmp::EQ, x[0], m.c(INFINITY)), m.c(f.at(1)), x[0]);
  r = m.sel(m.cmp(Cmp::EQ, x[0], m.c(-INFINITY)), m.c(f.at(2)), r);
  return m.sel(m.isnan(x[0]), m.c(f.at(0)), r);
}

// sign(NaN) is 0 in PyTorch.
Value sign(const Math& m, const Operands& x, const graph::Attrs&) {
  if (m.t == ElementType::Bool) return x[0];
  if (runtime::is_unsigned(m.t)) return m.sel(nonzero(m, x[0]), m.c(1), m.c(0));
  Value s = m.un("sign", x[0]);
  return is_float(m) ? m.sel(m.isnan(x[0]), m.c(0), s) : s;
}

Value signbit(const Math& m, const Operands& x, const graph::Attrs&) {
  if (m.t == ElementType::Bool || runtime::is_unsigned(m.t)) return m.cmp(Cmp::NE, x[0], x[0]);
  if (!is_float(m)) return negative(m, x[0]);
  const ElementType bits = m.t == ElementType::F64 ? ElementType::I64 : ElementType::I32;
  Value raw = m.b.bitcast_convert(x[0], bits);
  return m.cmp(Cmp::LT, raw, full(m.b, 0, bits, m.dims));
}

Value reciprocal(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.div(m.c(1), x[0]);
}

Value trunc(const Math& m, const Operands& x, const graph::Attrs&) {
  return is_float(m) ? m.trunc(x[0]) : x[0];
}

Value round(const Math& m, const Operands& x, const graph::Attrs&) {
  return is_float(m) ? m.un("round_nearest_even", x[0]) : x[0];
}

// PyTorch's formula: nearbyint(x * 10^d) / 10^d, or nearbyint(x / 10^-d) * 10^-d for d < 0.
Value round_decimals(const Math& m, const Operands& x, const graph::Attrs& attrs) {
  const double d = attrs.floats.at(0);
  Value scale = m.c(std::pow(10.0, std::abs(d)));
  if (d < 0) return m.mul(m.un("round_nearest_even", m.div(x[0], scale)), scale);
  return m.div(m.un("round_nearest_even", m.mul(x[0], scale)), scale);
}

Value frac(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.sub(x[0], m.trunc(x[0]));
}

Value erf(const Math& m, const Operands& x, const graph::Attrs&) { return m.erf(x[0]); }

// Giles' single-precision approximation, then Newton steps on erf(y) = x (as PyTorch does).
Value erfinv(const Math& m, const Operands& x, const graph::Attrs&) {
  const Value v = x[0];
  Value w = m.un("negate", m.un("log", m.mul(m.sub(m.c(1), v), m.add(m.c(1), v))));
  auto poly = [&](Value t, std::initializer_list<double> coeffs) {
    Value p = m.c(*coeffs.begin());
    for (auto it = coeffs.begin() + 1; it != coeffs.end(); ++it) p = m.add(m.c(*it), m.mul(p, t));
    return p;
  };
  Value central = poly(m.sub(w, m.c(2.5)),
                       {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                        0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941});
  Value tail = poly(m.sub(m.un("sqrt", w), m.c(3)),
                    {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682});
  Value y = m.mul(m.sel(m.cmp(Cmp::LT, w, m.c(5)), central, tail), v);
  for (int i = 0; i < 2; ++i) {
    Value slope = m.mul(m.c(2 / std::sqrt(M_PI)), m.un("exponential", m.un("negate", m.mul(y, y))));
    y = m.sub(y, m.div(m.sub(m.erf(y), v), slope));
  }
  Value a = m.un("abs", v);
  Value inf = m.mul(m.un("sign", v), m.c(INFINITY));
  return m.sel(m.cmp(Cmp::EQ, a, m.c(1)), inf, m.sel(m.cmp(Cmp::GT, a, m.c(1)), m.c(NAN), y));
}

template <const char* Op>
Value unary_op(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.un(Op, x[0]);
}

// log(x) / log(base) computed in f64, so that f32 results are correctly rounded (exact for
// powers of the base).
template <int Base>
Value log_base(const Math& m, const Operands& x, const graph::Attrs&) {
  Value wide = to_type(m.b, x[0], ElementType::F64);
  Value r = m.b.binary("divide", m.b.unary("log", wide),
                       full(m.b, std::log(static_cast<double>(Base)), ElementType::F64, m.dims));
  return to_type(m.b, r, m.t);
}

Value exp2(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.b.binary("power", m.c(2), x[0]);
}

// sqrt(1 - x^2) as sqrt((1 - x)(1 + x)), accurate near |x| = 1.
Value cosine_of_asin(const Math& m, Value x) {
  return m.un("sqrt", m.mul(m.sub(m.c(1), x), m.add(m.c(1), x)));
}
Value asin(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.b.binary("atan2", x[0], cosine_of_asin(m, x[0]));
}
Value acos(const Math& m, const Operands& x, const graph::Attrs&) {
  return m.b.binary("atan2", cosine_of_asin(m, x[0]), x[0]);
}
// atan(x) = 2 atan2(x, 1 + sqrt(1 + x^2)) (the half-angle identity), and pi/2 - 1/x beyond 1e8
// (where x^2 could overflow). Not atan2(x, 1): XLA:CPU computes that wrongly for arrays of 100 or
// more elements (measured: 0 instead of atan(x) for most of them).
Value atan(const Math& m, const Operands& x, const graph::Attrs&) {
  const Value a = m.un("abs", x[0]);
  const Value half =
      m.b.binary("atan2", a, m.add(m.c(1), m.un("sqrt", m.add(m.c(1), m.mul(a, a)))));
  const Value r = m.sel(m.cmp(Cmp::GT, a, m.c(1e8)), m.sub(m.c(M_PI / 2), m.div(m.c(1), a)),
                        m.mul(m.c(2), half));
  // x itself for NaN and for both zeros (keeping the sign of -0).
  const Value keep = m.b.binary("or", m.isnan(x[0]), m.cmp(Cmp::EQ, x[0], m.c(0)));
  return m.sel(keep, x[0], m.sel(negative(m, x[0]), m.un("negate", r), r));
}

// Below 1 from expm1 (no cancellation); above, from h = exp(|x| / 2) so that the result overflows
// only when sinh does.
Value sinh(const Math& m, const Operands& x, const graph::Attrs&) {
  Value e = m.un("exponential_minus_one", x[0]);
  Value small = m.mul(m.c(0.5), m.add(e, m.div(e, m.add(e, m.c(1)))));
  Value a = m.un("abs", x[0]);
  Value h = m.un("exponential", m.mul(a, m.c(0.5)));
  Value inv = m.div(m.c(1), h);
  Value big = m.mul(m.mul(m.c(0.5), m.sub(h, inv)), m.add(h, inv));
  big = m.sel(negative(m, x[0]), m.un("negate", big), big);
  return m.sel(m.cmp(Cmp::LT, a, m.c(1)), small, big);
}

Value cosh(const Math& m, const Operands& x, const graph::Attrs&) {
  Value h = m.un("exponential", m.mul(m.un("abs", x[0]), m.c(0.5)));
  return m.add(m.mul(m.mul(m.c(0.5), h), h), m.div(m.c(0.5), m.mul(h, h)));
}

// Inputs beyond 1e8 use log(2|x|), exact to rounding there, and avoid overflowing x * x.
constexpr double kLargeArg = 1e8;

Value asinh(const Math& m, const Operands& x, const graph::Attrs&) {
  Value a = m.un("abs", x[0]);
  Value a2 = m.mul(a, a);
  Value mid =
      m.un("log_plus_one", m.add(a, m.div(a2, m.add(m.c(1), m.un("sqrt", m.add(m.c(1), a2))))));
  Value large = m.add(m.un("log", a), m.c(M_LN2));
  Value r = m.sel(m.cmp(Cmp::GT, a, m.c(kLargeArg)), large, mid);
  r = m.sel(negative(m, x[0]), m.un("negate", r), r);
  return m.sel(m.cmp(Cmp::EQ, x[0], m.c(0)), x[0], r);
}

Value acosh(const Math& m, const Operands& x, const graph::Attrs&) {
  Value t = m.sub(x[0], m.c(1));
  Value mid = m.un("log_plus_one", m.add(t, m.un("sqrt", m.add(m.mul(m.c(2), t), m.mul(t, t)))));
  Value large = m.add(m.un("log", x[0]), m.c(M_LN2));
  Value r = m.sel(m.cmp(Cmp::GT, x[0], m.c(kLargeArg)), large, mid);
  return m.sel(m.cmp(Cmp::LT, x[0], m.c(1)), m.c(NAN), r);
}

Value atanh(const Math& m, const Operands& x, const graph::Attrs&) {
  Value ratio = m.div(m.mul(m.c(2), x[0]), m.sub(m.c(1), x[0]));
  return m.mul(m.c(0.5), m.un("log_plus_one", ratio));
}

constexpr char kNegName[] = "negate";
constexpr char kAbsName[] = "abs";
constexpr char kCeilName[] = "ceil";
constexpr char kFloorName[] = "floor";
constexpr char kExpName[] = "exponential";
constexpr char kLogName[] = "log";
constexpr char kSqrtName[] = "sqrt";
constexpr char kRsqrtName[] = "rsqrt";
constexpr char kTanhName[] = "tanh";
constexpr char kLogisticName[] = "logistic";
constexpr char kSinName[] = "sine";
constexpr char kCosName[] = "cosine";
constexpr char kAndName[] = "and";
constexpr char kOrName[] = "or";
constexpr char kXorName[] = "xor";
constexpr char kAddName[] = "add";
constexpr char kSubName[] = "subtract";
constexpr char kMulName[] = "multiply";
constexpr char kDivName[] = "divide";
constexpr char kExpm1Name[] = "exponential_minus_one";
constexpr char kLog1pName[] = "log_plus_one";
constexpr char kTanName[] = "tan";

// abs of an unsigned integer is the integer itself (StableHLO's abs takes signed types only).
std::vector<hlo::Value> emit_abs(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                 const graph::Attrs& attrs,
                                 const std::vector<hlo::TensorType>& outs) {
  if (runtime::is_unsigned(outs[0].dtype)) return {to_type(b, in[0], outs[0].dtype)};
  return emit_unary<kAbsName>(b, in, attrs, outs);
}

}  // namespace

std::vector<Value> lower_math(MathFn f, hlo::Builder& b, const Operands& in,
                              const graph::Attrs& attrs, const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  const hlo::ElementType t = compute_type(attrs, out);
  const Math m{b, math_type(t), out.dims};
  // Operands are rounded to the compute type first, as the CPU casts them to the common dtype
  // (an f32 0-dim divisor of a bf16 tensor is a bf16 divisor), then widened for the math.
  Operands xs;
  for (const Value& v : in) {
    xs.push_back(broadcast_to(b, to_type(b, to_type(b, v, t), m.t), out.dims));
  }
  return {to_type(b, f(m, xs, attrs), out.dtype)};
}

Value Math::c(double v) const { return full(b, v, t, dims); }

Value Math::max(Value x, Value y) const {
  if (!runtime::is_floating(t)) return b.binary("maximum", x, y);
  return sel(b.binary("or", cmp(Cmp::GT, x, y), isnan(x)), x, y);
}

Value Math::min(Value x, Value y) const {
  if (!runtime::is_floating(t)) return b.binary("minimum", x, y);
  return sel(b.binary("or", cmp(Cmp::LT, x, y), isnan(x)), x, y);
}

Value Math::trunc(Value x) const {
  return sel(cmp(Cmp::LT, x, c(0)), un("ceil", x), un("floor", x));
}

namespace {

// erf(|x|) for |x| below the split: 2/sqrt(pi) x exp(-x^2) sum (2x^2)^n / (2n+1)!!, a series of
// positive terms; erfc(|x|) beyond it from erfc's continued fraction. Term counts are for full
// precision.
struct ErfParts {
  Value small;  // erf(|x|), valid for |x| < split
  Value large;  // erfc(|x|), valid for |x| >= split
  Value use_small;
};
ErfParts erf_parts(const Math& m, Value x) {
  const bool f64 = m.t == ElementType::F64;
  Value a = m.un("abs", x);
  Value a2 = m.mul(a, a);
  Value gauss = m.un("exponential", m.un("negate", a2));
  Value acc = m.c(1);
  for (int n = f64 ? 45 : 30; n > 0; --n) {
    acc = m.add(m.c(1), m.mul(acc, m.mul(a2, m.c(2.0 / (2 * n + 1)))));
  }
  Value series = m.mul(m.mul(m.c(2 / std::sqrt(M_PI)), a), m.mul(gauss, acc));
  Value k = a;
  for (int n = f64 ? 40 : 20; n > 0; --n) k = m.add(a, m.div(m.c(n / 2.0), k));
  Value tail = m.div(gauss, m.mul(k, m.c(std::sqrt(M_PI))));
  return {series, tail, m.cmp(Cmp::LT, a, m.c(f64 ? 3 : 2.5))};
}

}  // namespace

Value Math::erf(Value x) const {
  const ErfParts p = erf_parts(*this, x);
  Value r = sel(p.use_small, p.small, sub(c(1), p.large));
  return sel(cmp(Cmp::LT, x, c(0)), un("negate", r), r);
}

Value Math::erfc(Value x) const {
  const ErfParts p = erf_parts(*this, x);
  Value r = sel(p.use_small, sub(c(1), p.small), p.large);
  return sel(cmp(Cmp::LT, x, c(0)), sub(c(2), r), r);
}

ElementType math_type(ElementType t) {
  return t == ElementType::F16 || t == ElementType::BF16 ? ElementType::F32 : t;
}

const graph::OpDef kAdd{"add", emit_binary<kAddName>};
const graph::OpDef kSub{"sub", emit_binary<kSubName>};
const graph::OpDef kMul{"mul", emit_binary<kMulName>};
const graph::OpDef kDiv{"div", emit_binary<kDivName>};
const graph::OpDef kMaximum{"maximum", emit_math<maximum>};
const graph::OpDef kMinimum{"minimum", emit_math<minimum>};
const graph::OpDef kEq{"eq", emit_compare<hlo::Cmp::EQ>};
const graph::OpDef kNe{"ne", emit_compare<hlo::Cmp::NE>};
const graph::OpDef kLt{"lt", emit_compare<hlo::Cmp::LT>};
const graph::OpDef kLe{"le", emit_compare<hlo::Cmp::LE>};
const graph::OpDef kGt{"gt", emit_compare<hlo::Cmp::GT>};
const graph::OpDef kGe{"ge", emit_compare<hlo::Cmp::GE>};
const graph::OpDef kWhere{"where", emit_where};
const graph::OpDef kNeg{"neg", emit_unary<kNegName>};
const graph::OpDef kAbs{"abs", emit_abs};
const graph::OpDef kCeil{"ceil", emit_rounding<kCeilName>};
const graph::OpDef kFloor{"floor", emit_rounding<kFloorName>};
const graph::OpDef kExp{"exp", emit_unary<kExpName>};
const graph::OpDef kLog{"log", emit_unary<kLogName>};
const graph::OpDef kSqrt{"sqrt", emit_unary<kSqrtName>};
const graph::OpDef kRsqrt{"rsqrt", emit_unary<kRsqrtName>};
const graph::OpDef kTanh{"tanh", emit_unary<kTanhName>};
const graph::OpDef kSigmoid{"sigmoid", emit_unary<kLogisticName>};
const graph::OpDef kSin{"sin", emit_unary<kSinName>};
const graph::OpDef kCos{"cos", emit_unary<kCosName>};
const graph::OpDef kBitwiseAnd{"bitwise_and", emit_binary<kAndName>};
const graph::OpDef kBitwiseOr{"bitwise_or", emit_binary<kOrName>};
const graph::OpDef kBitwiseXor{"bitwise_xor", emit_binary<kXorName>};
const graph::OpDef kRelu{"relu", emit_relu};
const graph::OpDef kThresholdBackward{"threshold_backward", emit_threshold_backward};
const graph::OpDef kRemainder{"remainder", emit_math<remainder>};
const graph::OpDef kFmod{"fmod", emit_math<fmod>};
const graph::OpDef kFloorDivide{"floor_divide", emit_math<floor_divide>};
const graph::OpDef kTruncDivide{"trunc_divide", emit_math<trunc_divide>};
const graph::OpDef kPow{"pow", emit_math<pow>};
const graph::OpDef kAtan2{"atan2", emit_math<atan2>};
const graph::OpDef kFmax{"fmax", emit_math<fmax<true>>};
const graph::OpDef kFmin{"fmin", emit_math<fmax<false>>};
const graph::OpDef kLogicalAnd{"logical_and", emit_math<logical<kAndName>>};
const graph::OpDef kLogicalOr{"logical_or", emit_math<logical<kOrName>>};
const graph::OpDef kLogicalXor{"logical_xor", emit_math<logical<kXorName>>};
const graph::OpDef kClamp{"clamp", emit_math<clamp>};
const graph::OpDef kClampMin{"clamp_min", emit_math<clamp_min>};
const graph::OpDef kClampMax{"clamp_max", emit_math<clamp_max>};
const graph::OpDef kLerp{"lerp", emit_math<lerp>};
const graph::OpDef kAddcmul{"addcmul", emit_math<addc<false>>};
const graph::OpDef kAddcdiv{"addcdiv", emit_math<addc<true>>};
const graph::OpDef kLogicalNot{"logical_not", emit_math<logical_not>};
const graph::OpDef kBitwiseNot{"bitwise_not", emit_math<bitwise_not>};
const graph::OpDef kIsnan{"isnan", emit_math<is_nan>};
const graph::OpDef kNanToNum{"nan_to_num", emit_math<nan_to_num>};
const graph::OpDef kSign{"sign", emit_math<sign>};
const graph::OpDef kSignbit{"signbit", emit_math<signbit>};
const graph::OpDef kReciprocal{"reciprocal", emit_math<reciprocal>};
const graph::OpDef kTrunc{"trunc", emit_math<trunc>};
const graph::OpDef kRound{"round", emit_math<round>};
const graph::OpDef kRoundDecimals{"round_decimals", emit_math<round_decimals>};
const graph::OpDef kFrac{"frac", emit_math<frac>};
const graph::OpDef kErf{"erf", emit_math<erf>};
const graph::OpDef kErfinv{"erfinv", emit_math<erfinv>};
const graph::OpDef kExpm1{"expm1", emit_math<unary_op<kExpm1Name>>};
const graph::OpDef kLog1p{"log1p", emit_math<unary_op<kLog1pName>>};
const graph::OpDef kLog2{"log2", emit_math<log_base<2>>};
const graph::OpDef kLog10{"log10", emit_math<log_base<10>>};
const graph::OpDef kExp2{"exp2", emit_math<exp2>};
const graph::OpDef kTan{"tan", emit_math<unary_op<kTanName>>};
const graph::OpDef kAsin{"asin", emit_math<asin>};
const graph::OpDef kAcos{"acos", emit_math<acos>};
const graph::OpDef kAtan{"atan", emit_math<atan>};
const graph::OpDef kSinh{"sinh", emit_math<sinh>};
const graph::OpDef kCosh{"cosh", emit_math<cosh>};
const graph::OpDef kAsinh{"asinh", emit_math<asinh>};
const graph::OpDef kAcosh{"acosh", emit_math<acosh>};
const graph::OpDef kAtanh{"atanh", emit_math<atanh>};

}  // namespace torch_pjrt::lowering

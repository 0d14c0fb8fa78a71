// Complex-number lowerings, composed of StableHLO's complex, real and imag ops.
#include "lowering/complex.h"

#include <cmath>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Value;
using Values = std::vector<Value>;
using Types = std::vector<hlo::TensorType>;

// `v` converted to the part type of complex type `t` and broadcast to `dims`.
Value part_operand(hlo::Builder& b, Value v, hlo::ElementType t, const std::vector<int64_t>& dims) {
  return broadcast_to(b, to_type(b, v, runtime::real_part_type(t)), dims);
}

Values emit_complex(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  const hlo::TensorType& out = outs[0];
  return {b.complex(part_operand(b, in[0], out.dtype, out.dims),
                    part_operand(b, in[1], out.dtype, out.dims))};
}

Values emit_polar(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  const hlo::TensorType& out = outs[0];
  const Value r = part_operand(b, in[0], out.dtype, out.dims);
  const Value theta = part_operand(b, in[1], out.dtype, out.dims);
  return {b.complex(b.binary("multiply", r, b.unary("cosine", theta)),
                    b.binary("multiply", r, b.unary("sine", theta)))};
}

// The real part, or the operand itself when it is real.
Value real_of(hlo::Builder& b, Value v) {
  return runtime::is_complex(v.type.dtype) ? b.unary("real", v) : v;
}

Values emit_real(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return {to_type(b, real_of(b, in[0]), outs[0].dtype)};
}

Values emit_imag(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  if (!runtime::is_complex(in[0].type.dtype)) return {full(b, 0, outs[0].dtype, outs[0].dims)};
  return {to_type(b, b.unary("imag", in[0]), outs[0].dtype)};
}

Values emit_from_half_pairs(hlo::Builder& b, const Values& in, const graph::Attrs&,
                            const Types& outs) {
  const std::vector<int64_t>& dims = outs[0].dims;
  std::vector<int64_t> start(dims.size() + 1, 0), limit = in[0].type.dims, step(dims.size() + 1, 1);
  auto part = [&](int64_t k) {
    start.back() = k;
    limit.back() = k + 1;
    return b.reshape(b.convert(b.slice(in[0], start, limit, step), hlo::ElementType::F32), dims);
  };
  return {b.complex(part(0), part(1))};
}

Values emit_to_half_pairs(hlo::Builder& b, const Values& in, const graph::Attrs&,
                          const Types& outs) {
  std::vector<int64_t> dims = in[0].type.dims;
  dims.push_back(1);
  auto part = [&](const char* which) {
    return b.reshape(b.convert(b.unary(which, in[0]), hlo::ElementType::F16), dims);
  };
  return {b.reshape(b.concatenate({part("real"), part("imag")}, dims.size() - 1), outs[0].dims)};
}

Values emit_conj(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  const Value z = to_type(b, in[0], outs[0].dtype);
  if (!runtime::is_complex(z.type.dtype)) return {z};
  return {b.complex(b.unary("real", z), b.unary("negate", b.unary("imag", z)))};
}

Values emit_complex_abs(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  return {to_type(b, b.unary("abs", in[0]), outs[0].dtype)};
}

Values emit_angle(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  const hlo::TensorType& out = outs[0];
  const Value x = in[0];
  if (runtime::is_complex(x.type.dtype)) {
    return {to_type(b, b.binary("atan2", b.unary("imag", x), b.unary("real", x)), out.dtype)};
  }
  const Value v = to_type(b, x, out.dtype);
  const Value zero = full(b, 0, out.dtype, out.dims);
  const Value pi = full(b, M_PI, out.dtype, out.dims);
  const Value angle = b.select(b.compare(hlo::Cmp::LT, v, zero), pi, zero);
  return {b.select(b.compare(hlo::Cmp::NE, v, v), v, angle)};  // NaN stays NaN
}

Values emit_complex_sgn(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types& outs) {
  const Value z = to_type(b, in[0], outs[0].dtype);
  const Value abs = b.unary("abs", z);
  const hlo::ElementType part = abs.type.dtype;
  const Value zero = full(b, 0, part, abs.type.dims);
  const Value is_zero = b.compare(hlo::Cmp::EQ, abs, zero);
  const Value safe = b.select(is_zero, full(b, 1, part, abs.type.dims), abs);
  const Value q = b.complex(b.binary("divide", b.unary("real", z), safe),
                            b.binary("divide", b.unary("imag", z), safe));
  return {b.select(is_zero, full(b, 0, z.type.dtype, z.type.dims), q)};
}

Values emit_is_finite(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types&) {
  return {b.binary("and", b.unary("is_finite", b.unary("real", in[0])),
                   b.unary("is_finite", b.unary("imag", in[0])))};
}

Values emit_is_nan(hlo::Builder& b, const Values& in, const graph::Attrs&, const Types&) {
  const Value re = b.unary("real", in[0]), im = b.unary("imag", in[0]);
  return {b.binary("or", b.compare(hlo::Cmp::NE, re, re), b.compare(hlo::Cmp::NE, im, im))};
}

}  // namespace

const graph::OpDef kComplex{"complex", emit_complex};
const graph::OpDef kPolar{"polar", emit_polar};
const graph::OpDef kReal{"real", emit_real};
const graph::OpDef kImag{"imag", emit_imag};
const graph::OpDef kComplexFromHalfPairs{"complex_from_half_pairs", emit_from_half_pairs};
const graph::OpDef kComplexToHalfPairs{"complex_to_half_pairs", emit_to_half_pairs};
const graph::OpDef kConj{"conj", emit_conj};
const graph::OpDef kComplexAbs{"complex_abs", emit_complex_abs};
const graph::OpDef kAngle{"angle", emit_angle};
const graph::OpDef kComplexSgn{"complex_sgn", emit_complex_sgn};
const graph::OpDef kComplexIsFinite{"complex_isfinite", emit_is_finite};
const graph::OpDef kComplexIsNan{"complex_isnan", emit_is_nan};

}  // namespace torch_pjrt::lowering

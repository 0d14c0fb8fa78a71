// frexp from the IEEE fields: f16/bf16 widen to f32 exactly, subnormals are normalized through
// their fraction field, and the exponent field is replaced by the one of [0.5, 1).
#include "lowering/frexp.h"

#include <cmath>

#include "lowering/common.h"
#include "lowering/elementwise.h"

namespace torch_pjrt::lowering {
namespace {

using hlo::Cmp;
using hlo::ElementType;
using hlo::Value;

std::vector<Value> frexp(hlo::Builder& b, const std::vector<Value>& in, const graph::Attrs&,
                         const std::vector<hlo::TensorType>& outs) {
  const hlo::TensorType& out = outs[0];
  const Math m{b, math_type(out.dtype), out.dims};
  const bool f64 = m.t == ElementType::F64;
  const int fraction_bits = f64 ? 52 : 23, bias = f64 ? 1023 : 127;
  const Math mi{b, f64 ? ElementType::I64 : ElementType::I32, m.dims};
  const Value x = to_type(b, in[0], m.t);
  auto exponent_field = [&](Value bits) {
    return b.binary("and", b.binary("shift_right_logical", bits, mi.c(fraction_bits)),
                    mi.c(2 * bias + 1));
  };
  const Value x_bits = b.bitcast_convert(x, mi.t);
  Value bits = x_bits;
  // A subnormal x is its fraction field (an integer, converted exactly) times 2^(1-bias-M); the
  // plugin flushes subnormal operands of float arithmetic to zero, so no scaling by a multiply.
  const Value fraction = b.binary("and", bits, mi.c(std::ldexp(1.0, fraction_bits) - 1));
  const Value subnormal = b.binary("and", mi.cmp(Cmp::EQ, exponent_field(x_bits), mi.c(0)),
                                   mi.cmp(Cmp::NE, fraction, mi.c(0)));
  const Value sign = b.binary("and", bits, mi.c(-std::ldexp(1.0, f64 ? 63 : 31)));
  const Value normalized = b.binary("or", b.bitcast_convert(b.convert(fraction, m.t), mi.t), sign);
  bits = mi.sel(subnormal, normalized, bits);
  const Value field = exponent_field(bits);
  // The exponent field of [0.5, 1) is bias - 1.
  Value exponent = mi.sub(field, mi.c(bias - 1));
  exponent = mi.sel(subnormal, mi.add(exponent, mi.c(1 - bias - fraction_bits)), exponent);
  const Value without_field =
      b.binary("xor", bits, b.binary("shift_left", field, mi.c(fraction_bits)));
  Value mantissa = b.bitcast_convert(
      b.binary("or", without_field, mi.c(std::ldexp(bias - 1, fraction_bits))), m.t);
  // 0 (both fields zero), inf and NaN (the top exponent field) are their own mantissa.
  const Value x_field = exponent_field(x_bits);
  const Value zero =
      b.binary("and", mi.cmp(Cmp::EQ, x_field, mi.c(0)), mi.cmp(Cmp::EQ, fraction, mi.c(0)));
  const Value special = b.binary("or", zero, mi.cmp(Cmp::EQ, x_field, mi.c(2 * bias + 1)));
  mantissa = m.sel(special, x, mantissa);
  exponent = mi.sel(special, mi.c(0), exponent);
  return {to_type(b, mantissa, out.dtype), to_type(b, exponent, outs[1].dtype)};
}

}  // namespace

const graph::OpDef kFrexp{"frexp", frexp};

}  // namespace torch_pjrt::lowering

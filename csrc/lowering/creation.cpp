// Lowerings that create values: constant fills and element type conversion.
#include "lowering/creation.h"

#include <optional>

#include "lowering/common.h"

namespace torch_pjrt::lowering {
namespace {

std::vector<hlo::Value> emit_fill(hlo::Builder& b, const std::vector<hlo::Value>&,
                                  const graph::Attrs& attrs,
                                  const std::vector<hlo::TensorType>& outs) {
  if (attrs.ints.empty()) return {b.splat(attrs.floats.at(0), outs[0])};
  hlo::Value v = b.constant_int(attrs.ints[0], outs[0].dtype);
  return {outs[0].rank() == 0 ? v : b.broadcast_in_dim(v, outs[0].dims, {})};
}

// Whether each element of floating `v` has its sign bit set (NaN included, which comparisons and
// some of XLA's conversions lose).
hlo::Value sign_bit(hlo::Builder& b, hlo::Value v) {
  using hlo::ElementType;
  const size_t width = runtime::element_size(v.type.dtype);
  const ElementType bits = width == 1   ? ElementType::I8
                           : width == 2 ? ElementType::I16
                           : width == 4 ? ElementType::I32
                                        : ElementType::I64;
  return b.compare(hlo::Cmp::LT, b.bitcast_convert(v, bits), b.splat(0, {bits, v.type.dims}));
}

// `v` rounded to a float8 type as PyTorch's CPU casts do: through float32 (a double rounds twice),
// float8_e4m3fn saturating at +-448 (infinities included), and a float8_e5m2 NaN as 0x7F with its
// sign (XLA keeps a different payload). The fnuz formats' overflow to their one NaN is XLA's too.
hlo::Value to_float8(hlo::Builder& b, hlo::Value v, hlo::ElementType t) {
  using hlo::ElementType;
  const bool e5m2_nan_bits = t == ElementType::F8E5M2 && runtime::is_floating(v.type.dtype);
  const std::optional<hlo::Value> negative =
      e5m2_nan_bits ? std::optional(sign_bit(b, v)) : std::nullopt;
  v = to_type(b, v, ElementType::F32);
  if (t == ElementType::F8E4M3FN) {
    const hlo::Value limit = b.splat(448.0, v.type);
    v = b.binary("maximum", b.binary("minimum", v, limit), b.unary("negate", limit));
  }
  const hlo::Value out = b.convert(v, t);
  if (!negative) return out;
  const hlo::TensorType bytes{ElementType::U8, v.type.dims};
  const hlo::Value nan = b.select(*negative, b.splat(0xFF, bytes), b.splat(0x7F, bytes));
  const hlo::Value is_nan = b.compare(hlo::Cmp::NE, v, v);
  return b.bitcast_convert(b.select(is_nan, nan, b.bitcast_convert(out, ElementType::U8)), t);
}

// A float8 value widened, keeping a NaN's sign as the CPU does (XLA's conversion drops it).
hlo::Value from_float8(hlo::Builder& b, hlo::Value v, hlo::ElementType t) {
  const hlo::Value out = b.convert(v, t);
  if (!runtime::is_floating(t)) return out;
  const hlo::Value negative_nan =
      b.binary("and", sign_bit(b, v), b.compare(hlo::Cmp::NE, out, out));
  return b.select(negative_nan, b.unary("negate", b.unary("abs", out)), out);
}

// Float to integer as PyTorch's CPU casts on x86-64 (its compilers' cvtt* instructions): truncate
// toward zero into a 32-bit integer for int8, int16, int32 and uint16, a 64-bit one for int64
// and uint8; a value outside that integer's range, infinities and NaN become its minimum (the
// "integer indefinite"); then keep the low bits. So float [-2, 3e38] to uint8 is [254, 0], where
// XLA's conversion would saturate. Other targets (bool, uint32/64) keep XLA's conversion.
std::optional<hlo::Value> float_to_int(hlo::Builder& b, hlo::Value v, hlo::ElementType t) {
  using hlo::ElementType;
  const bool wide = t == ElementType::I64 || t == ElementType::U8;
  if (!wide && t != ElementType::I8 && t != ElementType::I16 && t != ElementType::I32 &&
      t != ElementType::U16) {
    return std::nullopt;
  }
  const ElementType via = wide ? ElementType::I64 : ElementType::I32;
  if (v.type.dtype != ElementType::F64) v = to_type(b, v, ElementType::F32);  // exact
  const double lowest = wide ? -0x1p63 : -0x1p31;
  // lowest - 1 rounds to lowest where the float type has no room between them; lowest itself
  // then fails the test and becomes lowest anyway.
  const hlo::Value in_range =
      b.binary("and", b.compare(hlo::Cmp::GT, v, b.splat(lowest - 1, v.type)),
               b.compare(hlo::Cmp::LT, v, b.splat(-lowest, v.type)));
  const hlo::Value wrapped =
      b.select(in_range, b.convert(v, via), b.splat(lowest, {via, v.type.dims}));
  return to_type(b, wrapped, t);
}

std::vector<hlo::Value> emit_convert(hlo::Builder& b, const std::vector<hlo::Value>& in,
                                     const graph::Attrs&,
                                     const std::vector<hlo::TensorType>& outs) {
  const hlo::ElementType t = outs[0].dtype;
  hlo::Value v = in[0];
  if (v.type.dtype != t && runtime::is_float8(v.type.dtype)) {
    const bool to_float = runtime::is_floating(t) && !runtime::is_float8(t);
    v = from_float8(b, v, to_float || t == hlo::ElementType::Bool ? t : hlo::ElementType::F32);
  }
  const bool to_int =
      !runtime::is_floating(t) && !runtime::is_complex(t) && t != hlo::ElementType::Bool;
  if (to_int && runtime::is_complex(v.type.dtype)) {
    v = b.convert(v, runtime::real_part_type(v.type.dtype));  // the real part, as PyTorch's casts
  }
  if (to_int && runtime::is_floating(v.type.dtype)) {
    if (auto r = float_to_int(b, v, t)) return {broadcast_to(b, *r, outs[0].dims)};
  }
  v = v.type.dtype != t && runtime::is_float8(t) ? to_float8(b, v, t) : to_type(b, v, t);
  return {broadcast_to(b, v, outs[0].dims)};
}

}  // namespace

const graph::OpDef kFill{"fill", emit_fill};
const graph::OpDef kConvert{"convert", emit_convert};

}  // namespace torch_pjrt::lowering

// Tests of the Builder's emitted text, computed result types and operand validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include "hlo/builder.h"

namespace torch_pjrt::hlo {
namespace {

constexpr ElementType kF32 = ElementType::F32;
constexpr ElementType kI32 = ElementType::I32;
constexpr ElementType kI64 = ElementType::I64;
constexpr ElementType kF64 = ElementType::F64;
constexpr ElementType kBool = ElementType::Bool;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Expects `statement` to throw std::invalid_argument whose message starts with `prefix`.
#define EXPECT_INVALID(statement, prefix)                                               \
  do {                                                                                  \
    try {                                                                               \
      statement;                                                                        \
      ADD_FAILURE() << "no exception from " #statement;                                 \
    } catch (const std::invalid_argument& e) {                                          \
      EXPECT_EQ(std::string(e.what()).rfind(prefix, 0), 0u) << "message: " << e.what(); \
    }                                                                                   \
  } while (0)

// The text of the rank-0 constant `v` emitted by a fresh builder.
std::string constant_text(Value (Builder::*make)(double, ElementType), double v, ElementType t) {
  Builder b;
  return b.emit({(b.*make)(v, t)});
}

std::string float_const(double v, ElementType t) {
  return constant_text(&Builder::constant_float, v, t);
}

TEST(HloText, ModuleStructure) {
  Builder b;
  Value x = b.parameter({kF32, {3, 4}});
  Value y = b.parameter({kI64, {}});
  Value sum = b.binary("add", x, x);
  EXPECT_EQ(b.num_parameters(), 2);
  const std::string text = b.emit({sum, y, x, x});
  EXPECT_EQ(text.rfind("module @torch_pjrt {\n  func.func public @main(", 0), 0u) << text;
  EXPECT_TRUE(contains(text,
                       "@main(%arg0: tensor<3x4xf32>, %arg1: tensor<i64>) -> "
                       "(tensor<3x4xf32>, tensor<i64>, tensor<3x4xf32>, tensor<3x4xf32>)"))
      << text;
  EXPECT_TRUE(contains(text,
                       "= \"stablehlo.add\"(%arg0, %arg0) : (tensor<3x4xf32>, "
                       "tensor<3x4xf32>) -> tensor<3x4xf32>"))
      << text;
  EXPECT_TRUE(contains(text,
                       "\"func.return\"(%2, %arg1, %arg0, %arg0) : "
                       "(tensor<3x4xf32>, tensor<i64>, tensor<3x4xf32>, tensor<3x4xf32>) -> ()"))
      << text;
}

TEST(HloText, EmptyProgram) {
  Builder b;
  EXPECT_TRUE(contains(b.emit({}), "@main() -> () {\n    \"func.return\"() : () -> ()"))
      << b.emit({});
}

TEST(HloText, FloatConstantsAreExactHex) {
  EXPECT_TRUE(contains(float_const(1.0, kF32), "dense<0x3F800000> : tensor<f32>"));
  EXPECT_TRUE(contains(float_const(0.1, kF32), "dense<0x3DCCCCCD> : tensor<f32>"));
  EXPECT_TRUE(contains(float_const(-0.0, kF32), "dense<0x80000000> : tensor<f32>"));
  EXPECT_TRUE(contains(float_const(1e300, kF32), "dense<0x7F800000>"));
  EXPECT_TRUE(contains(float_const(-INFINITY, kF32), "dense<0xFF800000>"));
  EXPECT_TRUE(contains(float_const(NAN, kF32), "dense<0x7FC00000>"));
  EXPECT_TRUE(contains(float_const(1e-45, kF32), "dense<0x00000001>"));  // smallest subnormal
  EXPECT_TRUE(
      contains(float_const(0.1, ElementType::F64), "dense<0x3FB999999999999A> : tensor<f64>"));
  EXPECT_TRUE(contains(float_const(NAN, ElementType::F64), "dense<0x7FF8000000000000>"));
}

TEST(HloText, HalfConstantsRoundToNearestEven) {
  const ElementType f16 = ElementType::F16, bf16 = ElementType::BF16;
  EXPECT_TRUE(contains(float_const(1.0, f16), "dense<0x3C00> : tensor<f16>"));
  EXPECT_TRUE(contains(float_const(0.1, f16), "dense<0x2E66>"));
  EXPECT_TRUE(contains(float_const(1.0 / 3, f16), "dense<0x3555>"));
  EXPECT_TRUE(contains(float_const(65504, f16), "dense<0x7BFF>"));
  EXPECT_TRUE(contains(float_const(65519.99, f16), "dense<0x7BFF>"));
  EXPECT_TRUE(contains(float_const(65520, f16), "dense<0x7C00>"));  // tie rounds to even: inf
  EXPECT_TRUE(contains(float_const(-1e9, f16), "dense<0xFC00>"));
  EXPECT_TRUE(contains(float_const(NAN, f16), "dense<0x7E00>"));
  EXPECT_TRUE(contains(float_const(std::ldexp(1.0, -24), f16), "dense<0x0001>"));
  EXPECT_TRUE(contains(float_const(std::ldexp(1.0, -25), f16), "dense<0x0000>"));     // tie to even
  EXPECT_TRUE(contains(float_const(std::ldexp(3.0, -25), f16), "dense<0x0002>"));     // tie to even
  EXPECT_TRUE(contains(float_const(std::ldexp(1023.5, -24), f16), "dense<0x0400>"));  // to normal
  EXPECT_TRUE(contains(float_const(1.0, bf16), "dense<0x3F80> : tensor<bf16>"));
  EXPECT_TRUE(contains(float_const(-0.1, bf16), "dense<0xBDCD>"));
  EXPECT_TRUE(contains(float_const(1.0 + 1.0 / 256, bf16), "dense<0x3F80>"));  // tie to even
  // Rounding through f32 first would give 0x3F80; rounding once from double gives 0x3F81.
  EXPECT_TRUE(contains(float_const(1.0 + 1.0 / 256 + std::ldexp(1.0, -30), bf16), "dense<0x3F81>"));
  EXPECT_TRUE(contains(float_const(3.4e38, bf16), "dense<0x7F80>"));
}

// The bit pattern spelled in the emitted constant `dense<0x...>`.
uint64_t constant_bits(double v, ElementType t) {
  const std::string text = float_const(v, t);
  const size_t at = text.find("dense<0x");
  EXPECT_NE(at, std::string::npos) << text;
  return std::stoull(text.substr(at + 8), nullptr, 16);
}

// Random doubles whose binary exponents lie in [min_exp, max_exp], both signs.
std::vector<double> random_doubles(int min_exp, int max_exp) {
  std::mt19937_64 rng(42);
  std::vector<double> values;
  for (int i = 0; i < 3000; ++i) {
    const double mantissa = std::ldexp(static_cast<double>(rng() >> 11), -53);  // [0, 1)
    const int exp = min_exp + static_cast<int>(rng() % (max_exp - min_exp + 1));
    values.push_back((rng() & 1 ? -1 : 1) * std::ldexp(1 + mantissa, exp));
  }
  return values;
}

TEST(HloText, FloatConstantsMatchCompilerRounding) {
  for (double v : random_doubles(-155, 127)) {
    uint32_t want;
    const float f = static_cast<float>(v);
    std::memcpy(&want, &f, sizeof want);
    ASSERT_EQ(constant_bits(v, kF32), want) << v;
  }
#ifdef __FLT16_MANT_DIG__
  for (double v : random_doubles(-27, 17)) {
    uint16_t want;
    const _Float16 h = static_cast<_Float16>(v);
    std::memcpy(&want, &h, sizeof want);
    ASSERT_EQ(constant_bits(v, ElementType::F16), want) << v;
  }
#endif
}

TEST(HloText, IntegerConstantsWrapToType) {
  Builder b;
  const std::string text = b.emit(
      {b.constant_int(300, ElementType::I8), b.constant_int(-1, ElementType::U8),
       b.constant_int(-40000, ElementType::I16), b.constant_int((int64_t{1} << 40) + 5, kI32),
       b.constant_int(std::numeric_limits<int64_t>::min(), kI64), b.constant_int(1, kBool),
       b.constant_int(0, kBool), b.constant_int(-1, ElementType::U64),
       b.constant_int(70000, ElementType::U16)});
  EXPECT_TRUE(contains(text, "dense<44> : tensor<i8>")) << text;
  EXPECT_TRUE(contains(text, "dense<18446744073709551615> : tensor<ui64>")) << text;
  EXPECT_TRUE(contains(text, "dense<4464> : tensor<ui16>")) << text;
  EXPECT_TRUE(contains(text, "dense<255> : tensor<ui8>")) << text;
  EXPECT_TRUE(contains(text, "dense<25536> : tensor<i16>")) << text;
  EXPECT_TRUE(contains(text, "dense<5> : tensor<i32>")) << text;
  EXPECT_TRUE(contains(text, "dense<-9223372036854775808> : tensor<i64>")) << text;
  EXPECT_TRUE(contains(text, "dense<true> : tensor<i1>")) << text;
  EXPECT_TRUE(contains(text, "dense<false> : tensor<i1>")) << text;
}

TEST(HloText, Splats) {
  Builder b;
  const std::string text =
      b.emit({b.splat(2.0, {kF32, {2, 3}}), b.splat(-7, {kI32, {4}}), b.splat(1, {kBool, {2}}),
              b.splat(1.5, {ElementType::BF16, {}})});
  EXPECT_TRUE(
      contains(text, "{value = dense<0x40000000> : tensor<2x3xf32>} : () -> tensor<2x3xf32>"))
      << text;
  EXPECT_TRUE(contains(text, "dense<-7> : tensor<4xi32>")) << text;
  EXPECT_TRUE(contains(text, "dense<true> : tensor<2xi1>")) << text;
  EXPECT_TRUE(contains(text, "dense<0x3FC0> : tensor<bf16>")) << text;
}

TEST(HloText, AttributesSpelling) {
  Builder b;
  Value x = b.parameter({kF32, {2, 3}});
  Value i = b.parameter({kI32, {}});
  Value u = b.parameter({ElementType::U8, {2}});
  const std::string text =
      b.emit({b.compare(Cmp::LT, x, x), b.compare(Cmp::GE, i, i), b.compare(Cmp::NE, u, u),
              b.transpose(x, {1, 0}), b.broadcast_in_dim(i, {2, 2}, {}), b.iota({kI64, {4, 2}}, 1),
              b.dot_general(x, x, {}, {}, {1}, {1}), b.slice(x, {0, 1}, {2, 3}, {1, 2})});
  EXPECT_TRUE(contains(text,
                       "comparison_direction = #stablehlo<comparison_direction LT>, "
                       "compare_type = #stablehlo<comparison_type FLOAT>"))
      << text;
  EXPECT_TRUE(contains(text,
                       "#stablehlo<comparison_direction GE>, compare_type = "
                       "#stablehlo<comparison_type SIGNED>"))
      << text;
  EXPECT_TRUE(contains(text,
                       "#stablehlo<comparison_direction NE>, compare_type = "
                       "#stablehlo<comparison_type UNSIGNED>"))
      << text;
  EXPECT_TRUE(contains(text, "{permutation = array<i64: 1, 0>}")) << text;
  EXPECT_TRUE(contains(text, "{broadcast_dimensions = array<i64>}")) << text;
  EXPECT_TRUE(contains(text, "{iota_dimension = 1 : i64}")) << text;
  EXPECT_TRUE(contains(text,
                       "#stablehlo.dot<lhs_contracting_dimensions = [1], "
                       "rhs_contracting_dimensions = [1]>"))
      << text;
  EXPECT_TRUE(contains(text,
                       "start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 3>, "
                       "strides = array<i64: 1, 2>"))
      << text;
}

TEST(HloText, RegionNamesAreDistinct) {
  Builder b;
  Value x = b.parameter({kF32, {2, 3}});
  Value zero = b.constant_float(0, kF32);
  Value r1 = b.reduce(x, zero, {1}, ReduceKind::Sum);
  Value r2 = b.reduce(x, zero, {0}, ReduceKind::Max);
  const std::string text = b.emit({r1, r2});
  const std::string a1 = "%r" + std::to_string(r1.id) + "_a",
                    a2 = "%r" + std::to_string(r2.id) + "_a";
  EXPECT_NE(a1, a2);
  EXPECT_TRUE(contains(text, "^bb0(" + a1 + ": tensor<f32>")) << text;
  EXPECT_TRUE(contains(text, "^bb0(" + a2 + ": tensor<f32>")) << text;
  EXPECT_TRUE(contains(text, "\"stablehlo.maximum\"(" + a2)) << text;
  EXPECT_TRUE(contains(text, "{dimensions = array<i64: 1>}")) << text;
}

TEST(HloText, ResultTypes) {
  Builder b;
  Value x = b.parameter({kF32, {3, 2, 4}});
  Value y = b.parameter({kF32, {5, 2, 3}});
  Value idx = b.parameter({kI64, {2, 7}});
  Value flat = b.reshape(x, {24});
  EXPECT_EQ(b.dot_general(x, y, {1}, {1}, {0}, {2}).type, (TensorType{kF32, {2, 4, 5}}));
  EXPECT_EQ(b.reduce(x, b.constant_float(0, kF32), {0, 2}, ReduceKind::Sum).type,
            (TensorType{kF32, {2}}));
  EXPECT_EQ(b.transpose(x, {2, 0, 1}).type, (TensorType{kF32, {4, 3, 2}}));
  EXPECT_EQ(b.slice(x, {0, 0, 1}, {3, 2, 4}, {2, 1, 2}).type, (TensorType{kF32, {2, 2, 2}}));
  EXPECT_EQ(b.concatenate({x, x}, 2).type, (TensorType{kF32, {3, 2, 8}}));
  EXPECT_EQ(b.compare(Cmp::EQ, x, x).type, (TensorType{kBool, {3, 2, 4}}));
  EXPECT_EQ(b.unary("is_finite", x).type, (TensorType{kBool, {3, 2, 4}}));
  EXPECT_EQ(b.convert(x, kI32).type, (TensorType{kI32, {3, 2, 4}}));
  EXPECT_EQ(b.gather_1d(flat, idx).type, (TensorType{kF32, {2, 7}}));
  EXPECT_EQ(b.scatter_1d(flat, idx, b.splat(1, {kF32, {2, 7}})).type, flat.type);
  Value i0 = b.constant_int(0, kI32);
  EXPECT_EQ(b.dynamic_slice(x, {i0, i0, i0}, {1, 2, 3}).type, (TensorType{kF32, {1, 2, 3}}));
}

TEST(HloValidation, ForeignAndStaleValues) {
  Builder a, b;
  Value x = a.parameter({kF32, {2}});
  a.parameter({kF32, {2}});
  Value y = a.parameter({kF32, {2}});
  b.parameter({kF32, {3}});
  EXPECT_INVALID(b.binary("add", y, y), "hlo::add: ");    // id out of range in b
  EXPECT_INVALID(b.unary("negate", x), "hlo::negate: ");  // id 0 has another type in b
  EXPECT_INVALID(b.emit({Value{}}), "hlo::emit: ");
  EXPECT_INVALID(a.reshape(Value{}, {1}), "hlo::reshape: ");
}

TEST(HloValidation, FailedOpLeavesProgramUnchanged) {
  Builder b;
  Value x = b.parameter({kF32, {2}});
  Value y = b.parameter({kF32, {3}});
  const std::string before = b.emit({x});
  EXPECT_INVALID(b.binary("add", x, y), "hlo::add: ");
  EXPECT_INVALID(b.reduce(x, x, {0}, ReduceKind::Sum), "hlo::reduce: ");
  EXPECT_EQ(b.emit({x}), before);
  EXPECT_EQ(b.binary("add", y, y).id, 2);
}

TEST(HloValidation, ConstantsAndIota) {
  Builder b;
  EXPECT_INVALID(b.constant_float(1, kI32), "hlo::constant_float: ");
  EXPECT_INVALID(b.constant_int(1, kF32), "hlo::constant_int: ");
  EXPECT_INVALID(b.constant_int(2, kBool), "hlo::constant_int: ");
  EXPECT_INVALID(b.splat(2.5, {kI32, {2}}), "hlo::splat: ");
  EXPECT_INVALID(b.splat(NAN, {kI64, {2}}), "hlo::splat: ");
  EXPECT_INVALID(b.splat(1e19, {kI64, {2}}), "hlo::splat: ");
  EXPECT_INVALID(b.splat(1, {kF32, {-1}}), "hlo::splat: ");
  EXPECT_INVALID(b.parameter({kF32, {2, -3}}), "hlo::parameter: ");
  EXPECT_INVALID(b.iota({kI32, {2, 3}}, 2), "hlo::iota: ");
  EXPECT_INVALID(b.iota({kI32, {}}, 0), "hlo::iota: ");
  EXPECT_INVALID(b.iota({kBool, {2}}, 0), "hlo::iota: ");
}

TEST(HloValidation, Elementwise) {
  Builder b;
  Value f = b.parameter({kF32, {2}});
  Value f3 = b.parameter({kF32, {3}});
  Value i = b.parameter({kI32, {2}});
  Value p = b.parameter({kBool, {2}});
  Value u = b.parameter({ElementType::U8, {2}});
  EXPECT_INVALID(b.binary("add", f, f3), "hlo::add: operand types differ");
  EXPECT_INVALID(b.binary("multiply", f, i), "hlo::multiply: operand types differ");
  EXPECT_INVALID(b.binary("frobnicate", f, f), "hlo::binary: unknown op 'frobnicate'");
  EXPECT_INVALID(b.binary("subtract", p, p), "hlo::subtract: element type bool");
  EXPECT_INVALID(b.binary("and", f, f), "hlo::and: ");
  EXPECT_INVALID(b.binary("atan2", i, i), "hlo::atan2: ");
  EXPECT_INVALID(b.unary("sqrt", i), "hlo::sqrt: element type i32");
  EXPECT_INVALID(b.unary("not", f), "hlo::not: ");
  EXPECT_INVALID(b.unary("abs", u), "hlo::abs: ");
  EXPECT_INVALID(b.unary("exp", f), "hlo::unary: unknown op 'exp'");
  EXPECT_INVALID(b.compare(Cmp::LT, f, i), "hlo::compare: ");
  EXPECT_INVALID(b.select(f, f, f), "hlo::select: pred must be bool");
  EXPECT_INVALID(b.select(p, f, i), "hlo::select: branch types differ");
  EXPECT_INVALID(b.select(p, f3, f3), "hlo::select: pred");
  EXPECT_INVALID(b.bitcast_convert(f3, kI64),
                 "hlo::bitcast_convert: f32 to i64 needs a last dimension of 2, got tensor<3xf32>");
  EXPECT_INVALID(b.bitcast_convert(b.constant_float(1, kF32), kI64), "hlo::bitcast_convert: ");
  EXPECT_INVALID(b.bitcast_convert(p, ElementType::I8), "hlo::bitcast_convert: bit widths differ");
  EXPECT_INVALID(b.bitcast_convert(u, kBool), "hlo::bitcast_convert: bit widths differ");
  EXPECT_EQ(b.bitcast_convert(f, kI64).type.str(), "tensor<i64>");
  EXPECT_EQ(b.bitcast_convert(f3, ElementType::U8).type.str(), "tensor<3x4xui8>");
  EXPECT_INVALID(b.convert(f, static_cast<ElementType>(99)), "hlo::");
}

TEST(HloValidation, Shapes) {
  Builder b;
  Value x = b.parameter({kF32, {2, 3}});
  Value c = b.parameter({kF32, {3, 1}});
  Value d = b.parameter({kF64, {2, 3}});
  EXPECT_INVALID(b.reshape(x, {4, 2}), "hlo::reshape: element count differs");
  EXPECT_INVALID(b.reshape(x, {-2, -3}), "hlo::reshape: negative");
  EXPECT_INVALID(b.broadcast_in_dim(c, {2, 3, 4}, {1}), "hlo::broadcast_in_dim: broadcast_dims");
  EXPECT_INVALID(b.broadcast_in_dim(c, {2, 3, 4}, {1, 3}),
                 "hlo::broadcast_in_dim: broadcast dimension 3 out of range");
  EXPECT_INVALID(b.broadcast_in_dim(c, {2, 3, 4}, {1, 1}),
                 "hlo::broadcast_in_dim: broadcast dimension 1 repeated");
  EXPECT_INVALID(b.broadcast_in_dim(c, {2, 3, 4}, {0, 2}),
                 "hlo::broadcast_in_dim: operand dimension 0");
  EXPECT_INVALID(b.transpose(x, {0}), "hlo::transpose: ");
  EXPECT_INVALID(b.transpose(x, {1, 1}), "hlo::transpose: permutation dimension 1 repeated");
  EXPECT_INVALID(b.transpose(x, {0, 2}), "hlo::transpose: ");
  EXPECT_INVALID(b.slice(x, {0, 0}, {3, 3}, {1, 1}), "hlo::slice: bad bounds");
  EXPECT_INVALID(b.slice(x, {1, 0}, {0, 3}, {1, 1}), "hlo::slice: bad bounds");
  EXPECT_INVALID(b.slice(x, {0, 0}, {2, 3}, {1, 0}), "hlo::slice: bad bounds");
  EXPECT_INVALID(b.slice(x, {0}, {2}, {1}), "hlo::slice: ");
  EXPECT_INVALID(b.concatenate({}, 0), "hlo::concatenate: no operands");
  EXPECT_INVALID(b.concatenate({x, c}, 0), "hlo::concatenate: operand");
  EXPECT_INVALID(b.concatenate({x, d}, 0), "hlo::concatenate: operand");
  EXPECT_INVALID(b.concatenate({x, x}, 2), "hlo::concatenate: dimension 2 out of range");
}

TEST(HloValidation, DynamicSlices) {
  Builder b;
  Value x = b.parameter({kF32, {4, 5}});
  Value i = b.constant_int(1, kI32);
  Value l = b.constant_int(1, kI64);
  Value f = b.constant_float(1, kF32);
  Value v = b.parameter({kI32, {1}});
  EXPECT_INVALID(b.dynamic_slice(x, {i}, {1, 1}), "hlo::dynamic_slice: ");
  EXPECT_INVALID(b.dynamic_slice(x, {i, f}, {1, 1}), "hlo::dynamic_slice: start index");
  EXPECT_INVALID(b.dynamic_slice(x, {i, v}, {1, 1}), "hlo::dynamic_slice: start index");
  EXPECT_INVALID(b.dynamic_slice(x, {i, l}, {1, 1}),
                 "hlo::dynamic_slice: start indices must share");
  EXPECT_INVALID(b.dynamic_slice(x, {i, i}, {5, 1}), "hlo::dynamic_slice: size 5");
  EXPECT_INVALID(b.dynamic_update_slice(x, b.parameter({kF32, {5, 1}}), {i, i}),
                 "hlo::dynamic_update_slice: update");
  EXPECT_INVALID(b.dynamic_update_slice(x, b.parameter({kI32, {1, 1}}), {i, i}),
                 "hlo::dynamic_update_slice: update");
  EXPECT_INVALID(b.dynamic_update_slice(x, b.parameter({kF32, {1, 1}}), {i}),
                 "hlo::dynamic_update_slice: start");
}

TEST(HloValidation, DotGeneral) {
  Builder b;
  Value x = b.parameter({kF32, {2, 3, 4}});
  Value y = b.parameter({kF32, {2, 4, 5}});
  Value z = b.parameter({kF64, {2, 4, 5}});
  EXPECT_INVALID(b.dot_general(x, y, {0}, {0}, {1}, {1}),
                 "hlo::dot_general: contracting sizes differ");
  EXPECT_INVALID(b.dot_general(x, y, {1}, {0}, {2}, {1}), "hlo::dot_general: batch sizes differ");
  EXPECT_INVALID(b.dot_general(x, y, {0}, {}, {2}, {1}), "hlo::dot_general: ");
  EXPECT_INVALID(b.dot_general(x, y, {0}, {0}, {3}, {1}),
                 "hlo::dot_general: lhs batch/contracting dimension 3");
  EXPECT_INVALID(b.dot_general(x, y, {0}, {0}, {0}, {1}),
                 "hlo::dot_general: lhs batch/contracting dimension 0 repeated");
  EXPECT_INVALID(b.dot_general(x, z, {0}, {0}, {2}, {1}), "hlo::dot_general: element types differ");
}

TEST(HloText, DotGeneralPrecisionAndWideningResult) {
  Builder b;
  Value x = b.parameter({kF32, {2, 3}});
  Value h = b.parameter({ElementType::BF16, {2, 3}});
  const std::string text = b.emit({b.dot_general(x, x, {}, {}, {1}, {1}, Precision::kHighest),
                                   b.dot_general(x, x, {}, {}, {1}, {1}, Precision::kDefault),
                                   b.dot_general(h, h, {}, {}, {1}, {1}, Precision::kHigh, kF32)});
  EXPECT_TRUE(contains(text, "rhs_contracting_dimensions = [1]>")) << text;
  EXPECT_TRUE(contains(text, "(tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x2xf32>")) << text;
  EXPECT_TRUE(contains(text, "#stablehlo<precision HIGH>, #stablehlo<precision HIGH>")) << text;
  EXPECT_EQ(precision_config(Precision::kDefault), "");
  EXPECT_INVALID(b.dot_general(x, x, {}, {}, {1}, {1}, Precision::kDefault, ElementType::BF16),
                 "hlo::dot_general: result type bf16");
}

TEST(HloValidation, ReduceGatherScatter) {
  Builder b;
  Value x = b.parameter({kF32, {2, 3}});
  Value zero = b.constant_float(0, kF32);
  Value flat = b.parameter({kF32, {6}});
  Value idx = b.parameter({kI32, {2, 2}});
  EXPECT_INVALID(b.reduce(x, b.splat(0, {kF32, {1}}), {0}, ReduceKind::Sum), "hlo::reduce: init");
  EXPECT_INVALID(b.reduce(x, b.constant_int(0, kI32), {0}, ReduceKind::Sum), "hlo::reduce: init");
  EXPECT_INVALID(b.reduce(x, zero, {2}, ReduceKind::Sum), "hlo::reduce: reduced dimension 2");
  EXPECT_INVALID(b.reduce(x, zero, {0, 0}, ReduceKind::Sum),
                 "hlo::reduce: reduced dimension 0 repeated");
  EXPECT_INVALID(b.reduce(x, zero, {0}, ReduceKind::And), "hlo::reduce: and does not support");
  EXPECT_INVALID(b.reduce(x, zero, {0}, ReduceKind::Xor), "hlo::reduce: xor does not support");
  EXPECT_INVALID(b.gather_1d(x, idx), "hlo::gather_1d: operand must be rank 1");
  EXPECT_INVALID(b.gather_1d(flat, b.parameter({kF32, {2}})), "hlo::gather_1d: indices");
  EXPECT_INVALID(b.gather_1d(flat, b.parameter({kBool, {2}})), "hlo::gather_1d: indices");
  EXPECT_INVALID(b.scatter_1d(x, idx, b.splat(0, {kF32, {2, 2}})), "hlo::scatter_1d: operand");
  EXPECT_INVALID(b.scatter_1d(flat, idx, b.splat(0, {kF32, {4}})), "hlo::scatter_1d: updates");
  EXPECT_INVALID(b.scatter_1d(flat, idx, b.splat(0, {kI32, {2, 2}})), "hlo::scatter_1d: updates");
}

TEST(HloText, CallsFunctionsAddedOncePerKey) {
  Builder b;
  Value x = b.parameter({kF32, {2}});
  const std::string fn =
      "  func.func private @k_twice(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<i64>) {\n"
      "    %c = stablehlo.constant dense<2> : tensor<i64>\n"
      "    %0 = stablehlo.add %a, %a : tensor<2xf32>\n"
      "    return %0, %c : tensor<2xf32>, tensor<i64>\n  }";
  EXPECT_TRUE(b.add_functions("k", fn));
  EXPECT_FALSE(b.add_functions("k", fn));  // a second call site adds nothing
  auto r1 = b.call("k_twice", {x}, {{kF32, {2}}, {kI64, {}}});
  ASSERT_EQ(r1.size(), 2u);
  auto r2 = b.call("k_twice", {r1[0]}, {{kF32, {2}}, {kI64, {}}});
  const std::string text = b.emit({r2[0], r1[1]});
  EXPECT_TRUE(contains(text,
                       "%1:2 = \"func.call\"(%arg0) {callee = @k_twice} : (tensor<2xf32>) -> "
                       "(tensor<2xf32>, tensor<i64>)"))
      << text;
  EXPECT_TRUE(contains(text, "\"func.call\"(%1#0) {callee = @k_twice}")) << text;
  EXPECT_TRUE(contains(text, "\"func.return\"(%3#0, %1#1)")) << text;
  // The functions follow @main inside the module, once.
  const size_t main_end = text.find("  }\n", text.find("func.return"));
  EXPECT_EQ(text.find(fn), main_end + 4) << text;
  EXPECT_EQ(text.find("@k_twice(%a"), text.rfind("@k_twice(%a")) << text;
  EXPECT_EQ(text.substr(text.size() - 2), "}\n");
}

TEST(HloValidation, Call) {
  Builder b;
  Value x = b.parameter({kF32, {2}});
  Builder other;
  Value y = other.parameter({kF32, {3}});  // id 0 has another type in b
  EXPECT_THROW(b.call("f", {y}, {{kF32, {2}}}), std::invalid_argument);
  EXPECT_THROW(b.call("f", {x}, {}), std::invalid_argument);
  EXPECT_THROW(b.call("main", {x}, {{kF32, {2}}}), std::invalid_argument);
  EXPECT_THROW(b.call("a b", {x}, {{kF32, {2}}}), std::invalid_argument);
  EXPECT_THROW(b.call("9f", {x}, {{kF32, {2}}}), std::invalid_argument);
  EXPECT_NO_THROW(b.call("k_0abc", {x}, {{kF32, {2}}}));
}

}  // namespace
}  // namespace torch_pjrt::hlo

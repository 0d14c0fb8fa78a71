// Elementwise kernels: arithmetic with PyTorch type promotion and broadcasting, division modes,
// remainder, pow, clamp, lerp, comparisons, where, unary math, bitwise and logical ops, relu and
// its backward; each in functional, in-place and out= form.
#include "lowering/elementwise.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>

#include "aten/device_checks.h"
#include "aten/dtype_rules.h"
#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/complex.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;

Tensor wrap(const Scalar& s) { return at::native::wrapped_scalar_tensor(s); }

// Binary arithmetic: computes in the promoted type; `alpha` scales the second operand.
OpResult arithmetic(const graph::OpDef& op, const char* name, const Tensor& a, const Tensor& b,
                    std::optional<Scalar> alpha = std::nullopt) {
  at::ScalarType dtype = at::result_type(a, b);
  // alpha != 1 is a third operand (a runtime scalar: optimizers change it every step).
  std::optional<Tensor> scale;
  if (alpha) {
    TORCH_CHECK(!alpha->isFloatingPoint() || at::isFloatingType(dtype),
                "For integral input tensors, argument alpha must not be a floating point number.");
    if (!(alpha->isIntegral(true) && alpha->toLong() == 1)) scale = wrap(*alpha);
  }
  if (&op == &lowering::kSub) at::native::sub_check(a, b);
  if (&op == &lowering::kDiv && at::isIntegralType(dtype, /*includeBool=*/true)) {
    dtype = at::typeMetaToScalarType(at::get_default_dtype());
  }
  if (scale) return elementwise(op, name, {&a, &b, &*scale}, dtype, {});
  const bool scaling = &op == &lowering::kMul || &op == &lowering::kDiv;
  return elementwise(op, name, {&a, &b}, dtype, {},
                     scaling ? scalar_operand_compute(dtype, b) : std::nullopt);
}

// Comparisons compute in the promoted type and return bool.
OpResult comparison(const graph::OpDef& op, const char* name, const Tensor& a, const Tensor& b) {
  const bool bytewise = &op == &lowering::kEq || &op == &lowering::kNe;
  if (bytewise && is_float4(a) && is_float4(b)) {  // the CPU compares float4 pairs as bytes
    return comparison(op, name, float4_bytes(a), float4_bytes(b));
  }
  const at::ScalarType compute = binary_result_type(a, b);
  // Complex numbers have no order: only eq and ne take them (the CPU's error).
  TORCH_CHECK_NOT_IMPLEMENTED(
      !at::isComplexType(compute) || &op == &lowering::kEq || &op == &lowering::kNe, "\"", name,
      "_cpu\" not implemented for '", c10::toString(compute), "'");
  return elementwise(op, name, {&a, &b}, at::kBool, {}, compute);
}

// isposinf / isneginf: equality with +-inf, computed in the input's type (always false for
// integers, which PyTorch also allows).
OpResult is_inf_result(const Tensor& a, double inf) {
  const Tensor target = at::native::wrapped_scalar_tensor(inf);
  const at::ScalarType compute = at::isFloatingType(a.scalar_type()) ? a.scalar_type() : at::kFloat;
  return elementwise(lowering::kEq, inf > 0 ? "isposinf" : "isneginf", {&a, &target}, at::kBool, {},
                     compute);
}

OpResult neg_result(const Tensor& a) {
  TORCH_CHECK(a.scalar_type() != at::kBool,
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
              "invert a mask, use the `~` or `logical_not()` operator instead.");
  return elementwise(lowering::kNeg, "neg", {&a}, a.scalar_type(), {});
}

// Unary math: integer inputs compute in the default float type, as in PyTorch. Complex inputs
// only for the ops whose lowering is StableHLO's complex-capable op (or composed of them).
OpResult float_unary_result(const graph::OpDef& op, const char* name, const Tensor& a) {
  if (a.is_complex()) {
    static const graph::OpDef* const complex_ok[] = {
        &lowering::kExp,  &lowering::kLog,        &lowering::kSqrt,  &lowering::kRsqrt,
        &lowering::kTanh, &lowering::kSigmoid,    &lowering::kSin,   &lowering::kCos,
        &lowering::kTan,  &lowering::kReciprocal, &lowering::kExpm1, &lowering::kLog1p};
    // Ops whose real lowering does not take complex operands, and their complex lowering.
    static const std::pair<const graph::OpDef*, const graph::OpDef*> complex_of[] = {
        {&lowering::kAsin, &lowering::kComplexAsin},
        {&lowering::kAcos, &lowering::kComplexAcos},
        {&lowering::kAtan, &lowering::kComplexAtan},
        {&lowering::kAsinh, &lowering::kComplexAsinh},
        {&lowering::kAcosh, &lowering::kComplexAcosh},
        {&lowering::kAtanh, &lowering::kComplexAtanh},
        {&lowering::kSinh, &lowering::kComplexSinh},
        {&lowering::kCosh, &lowering::kComplexCosh},
        {&lowering::kLog2, &lowering::kComplexLog2},
        {&lowering::kLog10, &lowering::kComplexLog10},
        {&lowering::kExp2, &lowering::kComplexExp2},
        {&lowering::kSqrt, &lowering::kComplexSqrt},
        {&lowering::kLog1p, &lowering::kComplexLog1p},
        {&lowering::kExp, &lowering::kComplexExp},
        {&lowering::kExpm1, &lowering::kComplexExpm1},
        {&lowering::kTanh, &lowering::kComplexTanh},
        {&lowering::kReciprocal, &lowering::kComplexReciprocal},
        {&lowering::kRsqrt, &lowering::kComplexRsqrt}};
    for (const auto& [real_op, complex_op] : complex_of) {
      if (real_op == &op) return elementwise(*complex_op, name, {&a}, a.scalar_type(), {});
    }
    TORCH_CHECK_NOT_IMPLEMENTED(
        std::find(std::begin(complex_ok), std::end(complex_ok), &op) != std::end(complex_ok), name,
        ": complex inputs are not supported on tpu");
  }
  const at::ScalarType dtype = at::isIntegralType(a.scalar_type(), /*includeBool=*/true)
                                   ? at::typeMetaToScalarType(at::get_default_dtype())
                                   : a.scalar_type();
  return elementwise(op, name, {&a}, dtype, {});
}

// abs and sgn of a complex tensor (abs gives its real type); sign and rounding refuse it.
OpResult complex_unary_result(const graph::OpDef& op, const char* name, const Tensor& a) {
  const std::string_view n = name;
  TORCH_CHECK(n != "abs_", "In-place abs is not supported for complex tensors.");
  if (&op == &lowering::kAbs) {
    return elementwise(lowering::kComplexAbs, name, {&a}, c10::toRealValueType(a.scalar_type()),
                       {});
  }
  TORCH_CHECK(n.substr(0, 3) == "sgn",
              n.substr(0, 4) == "sign"
                  ? "Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
                    "use torch.sgn instead."
                  : std::string(name) + " is not supported for complex inputs");
  return elementwise(lowering::kComplexSgn, name, {&a}, a.scalar_type(), {});
}

// Unary ops that keep the input's dtype.
OpResult same_type_unary_result(const graph::OpDef& op, const char* name, const Tensor& a) {
  if (a.is_complex()) return complex_unary_result(op, name, a);
  TORCH_CHECK(a.scalar_type() != at::kBool || &op != &lowering::kAbs,
              "abs_cpu\" not implemented for 'Bool'");
  return elementwise(op, name, {&a}, a.scalar_type(), {});
}

// abs.out: a complex input writes |z| into a complex out of its own dtype (imaginary parts 0) or
// a real out its real type can be cast to, as the CPU's complex-to-float out= rule does.
Tensor& abs_out(const Tensor& a, Tensor& out) {
  if (!a.is_complex())
    return to_same_dtype_out(out, same_type_unary_result(lowering::kAbs, "abs", a));
  const at::ScalarType real = c10::toRealValueType(a.scalar_type());
  if (out.is_complex()) {
    TORCH_CHECK(out.scalar_type() == a.scalar_type(), "Found dtype ", out.scalar_type(),
                " but expected ", a.scalar_type());
  } else {
    TORCH_CHECK(at::canCast(real, out.scalar_type()), "result type ", real,
                " can't be cast to the desired output type ", out.scalar_type());
  }
  return copy_to_out(out, to_new(complex_unary_result(lowering::kAbs, "abs", a)));
}

OpResult bitwise_result(const graph::OpDef& op, const char* name, const Tensor& a,
                        const Tensor& b) {
  const at::ScalarType dtype = binary_result_type(a, b);
  TORCH_CHECK_NOT_IMPLEMENTED(at::isIntegralType(dtype, /*includeBool=*/true), "\"", name,
                              "_cpu\" not implemented for '", c10::toString(dtype), "'");
  return elementwise(op, name, {&a, &b}, dtype, {});
}

// Binary ops in the promoted type, not bool: remainder, fmod, floor and trunc division, pow.
OpResult promoted(const graph::OpDef& op, const char* name, const Tensor& a, const Tensor& b) {
  const at::ScalarType dtype = binary_result_type(a, b);
  check_implemented(dtype != at::kBool, name, dtype);
  const bool division = &op == &lowering::kTruncDivide || &op == &lowering::kFloorDivide;
  return elementwise(op, name, {&a, &b}, dtype, {},
                     division ? scalar_operand_compute(dtype, b) : std::nullopt);
}

// Integer division and remainder: a zero divisor raises "ZeroDivisionError" as on the CPU,
// checked on the device (device_checks.h); the quotient computed from it is never read.
OpResult divided(const graph::OpDef& op, const char* name, const Tensor& a, const Tensor& b) {
  OpResult r = promoted(op, name, a, b);
  const int64_t numel = c10::multiply_integers(r.sizes);
  if (at::isIntegralType(r.dtype, /*includeBool=*/false) && numel > 0) {
    graph::depends_on(r.value, check_nonzero(name, b,
                                             {graph::CheckKind::Runtime, "ZeroDivisionError", "",
                                              /*show_value=*/false}));
  }
  return r;
}

OpResult div_mode_result(const char* name, const Tensor& a, const Tensor& b,
                         std::optional<c10::string_view> mode) {
  if (!mode) return arithmetic(lowering::kDiv, name, a, b);
  if (*mode == "trunc") return divided(lowering::kTruncDivide, name, a, b);
  if (*mode == "floor") return divided(lowering::kFloorDivide, name, a, b);
  TORCH_CHECK(false,
              "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
              *mode, "'");
}

OpResult pow_scalar_exponent(const Tensor& a, const Scalar& exponent) {
  TORCH_CHECK(!(at::isIntegralType(a.scalar_type(), /*includeBool=*/true) &&
                exponent.isIntegral(true) && exponent.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
  return promoted(lowering::kPow, "pow", a, wrap(exponent));
}

OpResult atan2_result(const Tensor& a, const Tensor& b) {
  return elementwise(lowering::kAtan2, "atan2", {&a, &b}, float_type(at::result_type(a, b)), {});
}

// clamp with optional bounds: NaN in the input or a bound propagates, and min > max gives max.
OpResult clamp_result(const Tensor& self, const std::optional<Tensor>& lo,
                      const std::optional<Tensor>& hi) {
  const bool has_lo = lo && lo->defined(), has_hi = hi && hi->defined();
  TORCH_CHECK(has_lo || has_hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  at::native::ResultTypeState state;
  for (const Tensor* t : {&self, has_lo ? &*lo : nullptr, has_hi ? &*hi : nullptr})
    if (t) state = at::native::update_result_type_state(*t, state);
  const at::ScalarType dtype = at::native::result_type(state);
  // PyTorch clamps bool tensors by tensor bounds, not by scalar ones.
  auto scalar = [](bool has, const std::optional<Tensor>& t) {
    return !has || t->unsafeGetTensorImpl()->is_wrapped_number();
  };
  if (scalar(has_lo, lo) && scalar(has_hi, hi)) {
    check_implemented(dtype != at::kBool,
                      has_lo && has_hi ? "clamp_scalar_cpu"
                      : has_lo         ? "clamp_min_scalar_cpu"
                                       : "clamp_max_scalar_cpu",
                      dtype);
  }
  if (has_lo && has_hi)
    return elementwise(lowering::kClamp, "clamp", {&self, &*lo, &*hi}, dtype, {});
  if (has_lo) return elementwise(lowering::kClampMin, "clamp", {&self, &*lo}, dtype, {});
  return elementwise(lowering::kClampMax, "clamp", {&self, &*hi}, dtype, {});
}

std::optional<Tensor> wrap_optional(const std::optional<Scalar>& s) {
  return s ? std::optional<Tensor>(wrap(*s)) : std::nullopt;
}

OpResult lerp_result(const Tensor& self, const Tensor& end, const Tensor& weight) {
  TORCH_CHECK(self.scalar_type() == end.scalar_type(), "expected dtype ", self.dtype(),
              " for `end` but got dtype ", end.dtype());
  check_implemented(at::isFloatingType(self.scalar_type()) || self.is_complex(),
                    "lerp_kernel_scalar", self.scalar_type());
  // A scalar weight enters in float32 for float16/bfloat16, as the CPU's opmath weight does.
  return elementwise(
      lowering::kLerp, "lerp", {&self, &end, &weight}, self.scalar_type(), {},
      at::isReducedFloatingType(self.scalar_type()) ? at::kFloat : self.scalar_type());
}

OpResult lerp_tensor_result(const Tensor& self, const Tensor& end, const Tensor& weight) {
  TORCH_CHECK(self.scalar_type() == weight.scalar_type(), "expected dtype ", self.dtype(),
              " for `weight` but got dtype ", weight.dtype());
  return lerp_result(self, end, weight);
}

// self + value * t1 * t2 (or / t2) in the type promoted over the three tensors.
OpResult addc_result(bool divide, const Tensor& self, const Tensor& t1, const Tensor& t2,
                     const Scalar& value) {
  if (divide) {
    TORCH_CHECK(
        !(at::isIntegralType(t1.scalar_type(), true) && at::isIntegralType(t2.scalar_type(), true)),
        "Integer division with addcdiv is no longer supported, and in a future  release "
        "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
        "behavior can be implemented as (input + value * torch.trunc(tensor1 / "
        "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
        "tensor2) for float inputs. The future addcdiv behavior is just the latter "
        "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  }
  at::native::ResultTypeState state;
  for (const Tensor* t : {&self, &t1, &t2}) state = at::native::update_result_type_state(*t, state);
  const at::ScalarType dtype = at::native::result_type(state);
  // `value` is a runtime operand: Adam's step size changes every step.
  const Tensor scale = wrap(value);
  return elementwise(divide ? lowering::kAddcdiv : lowering::kAddcmul,
                     divide ? "addcdiv" : "addcmul", {&self, &t1, &t2, &scale}, dtype, {});
}

// Logical ops: bool result, operands compared with zero in their promoted type.
OpResult logical_result(const graph::OpDef& op, const char* name, const Tensor& a,
                        const Tensor& b) {
  return elementwise(op, name, {&a, &b}, at::kBool, {}, at::result_type(a, b));
}

// Predicates and logical_not: bool result computed in the input's type.
OpResult predicate_result(const graph::OpDef& op, const char* name, const Tensor& a) {
  if (a.is_complex() && &op == &lowering::kIsnan) {
    return elementwise(lowering::kComplexIsNan, name, {&a}, at::kBool, {});
  }
  return elementwise(op, name, {&a}, at::kBool, {}, a.scalar_type());
}

OpResult bitwise_not_result(const graph::OpDef& op, const char* name, const Tensor& a) {
  check_implemented(at::isIntegralType(a.scalar_type(), /*includeBool=*/true), "bitwise_not_cpu",
                    a.scalar_type());
  return elementwise(op, name, {&a}, a.scalar_type(), {});
}

OpResult nan_to_num_result(const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
                           std::optional<double> neginf) {
  graph::Attrs attrs;
  if (at::isFloatingType(a.scalar_type())) {
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "nan_to_num", [&] {
      attrs.floats = {
          nan.value_or(0.0),
          posinf.value_or(static_cast<double>(std::numeric_limits<scalar_t>::max())),
          neginf.value_or(static_cast<double>(std::numeric_limits<scalar_t>::lowest()))};
    });
  }
  return elementwise(lowering::kNanToNum, "nan_to_num", {&a}, a.scalar_type(), std::move(attrs));
}

// Unary ops defined on floats only, keeping the dtype (frac).
OpResult float_only_unary_result(const graph::OpDef& op, const char* name, const Tensor& a) {
  check_implemented(at::isFloatingType(a.scalar_type()), (std::string(name) + "_cpu").c_str(),
                    a.scalar_type());
  return elementwise(op, name, {&a}, a.scalar_type(), {});
}

OpResult round_decimals_result(const Tensor& a, int64_t decimals) {
  if (decimals == 0) return same_type_unary_result(lowering::kRound, "round", a);
  check_implemented(at::isFloatingType(a.scalar_type()), "round_cpu", a.scalar_type());
  graph::Attrs attrs;
  attrs.floats = {static_cast<double>(decimals)};
  return elementwise(lowering::kRoundDecimals, "round", {&a}, a.scalar_type(), std::move(attrs));
}

OpResult relu_result(const Tensor& a) {
  TORCH_CHECK(a.scalar_type() != at::kBool, "Boolean inputs not supported for relu");
  return elementwise(lowering::kRelu, "relu", {&a}, a.scalar_type(), {});
}

OpResult threshold_backward_result(const Tensor& grad, const Tensor& self,
                                   const Scalar& threshold) {
  graph::Attrs attrs;
  attrs.floats = {threshold.toDouble()};
  return elementwise(lowering::kThresholdBackward, "threshold_backward", {&grad, &self},
                     at::result_type(grad, self), std::move(attrs));
}

OpResult where_result(const Tensor& cond, const Tensor& a, const Tensor& b) {
  TORCH_CHECK(cond.scalar_type() == at::kBool,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              cond.scalar_type());
  return elementwise(lowering::kWhere, "where", {&cond, &a, &b}, at::result_type(a, b), {});
}

}  // namespace

#define TP_ARITH(NAME, OP)                                                                   \
  m.impl(#NAME ".Tensor", [](const Tensor& a, const Tensor& b, const Scalar& alpha) {        \
    return to_new(arithmetic(OP, #NAME, a, b, alpha));                                       \
  });                                                                                        \
  m.impl(#NAME "_.Tensor", [](Tensor& a, const Tensor& b, const Scalar& alpha) -> Tensor& {  \
    return to_self(a, arithmetic(OP, #NAME "_", a, b, alpha));                               \
  });                                                                                        \
  m.impl(#NAME ".out",                                                                       \
         [](const Tensor& a, const Tensor& b, const Scalar& alpha, Tensor& out) -> Tensor& { \
           return to_out(out, arithmetic(OP, #NAME, a, b, alpha));                           \
         });

#define TP_BINARY(NAME, OVERLOAD, OP)                                                           \
  m.impl(#NAME OVERLOAD,                                                                        \
         [](const Tensor& a, const Tensor& b) { return to_new(arithmetic(OP, #NAME, a, b)); }); \
  m.impl(#NAME "_" OVERLOAD, [](Tensor& a, const Tensor& b) -> Tensor& {                        \
    return to_self(a, arithmetic(OP, #NAME "_", a, b));                                         \
  });                                                                                           \
  m.impl(#NAME ".out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {           \
    return to_out(out, arithmetic(OP, #NAME, a, b));                                            \
  });

#define TP_UNARY(NAME, OP, RESULT)                                                          \
  m.impl(#NAME, [](const Tensor& a) { return to_new(RESULT(OP, #NAME, a)); });              \
  m.impl(#NAME "_", [](Tensor& a) -> Tensor& { return to_self(a, RESULT(OP, #NAME, a)); }); \
  m.impl(#NAME ".out", [](const Tensor& a, Tensor& out) -> Tensor& {                        \
    return to_out(out, RESULT(OP, #NAME, a));                                               \
  });

// In place, an overlapping self is refused before the dtype, as by the CPU's TensorIterator.
#define TP_EXACT_UNARY(NAME, OP, RESULT)                                       \
  m.impl(#NAME, [](const Tensor& a) { return to_new(RESULT(OP, #NAME, a)); }); \
  m.impl(#NAME "_", [](Tensor& a) -> Tensor& {                                 \
    at::assert_no_internal_overlap(a);                                         \
    return to_self(a, RESULT(OP, #NAME, a));                                   \
  });                                                                          \
  m.impl(#NAME ".out", [](const Tensor& a, Tensor& out) -> Tensor& {           \
    return to_same_dtype_out(out, RESULT(OP, #NAME, a));                       \
  });

#define TP_BITWISE(NAME, OP)                                                                 \
  m.impl(#NAME ".Tensor", [](const Tensor& a, const Tensor& b) {                             \
    return to_new(bitwise_result(OP, #NAME, a, b));                                          \
  });                                                                                        \
  m.impl(#NAME "_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {                       \
    check_binary_destination(a, a, b);                                                       \
    return to_self(a, bitwise_result(OP, #NAME, a, b));                                      \
  });                                                                                        \
  m.impl(#NAME ".Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& { \
    check_binary_destination(out, a, b);                                                     \
    return to_out(out, bitwise_result(OP, #NAME, a, b));                                     \
  });

#define TP_COMPARE(NAME, OP)                                                                    \
  m.impl(#NAME ".Tensor",                                                                       \
         [](const Tensor& a, const Tensor& b) { return to_new(comparison(OP, #NAME, a, b)); }); \
  m.impl(#NAME ".Scalar", [](const Tensor& a, const Scalar& b) {                                \
    return to_new(comparison(OP, #NAME, a, at::native::wrapped_scalar_tensor(b)));              \
  });                                                                                           \
  m.impl(#NAME ".Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {    \
    return to_out(out, comparison(OP, #NAME, a, b));                                            \
  });                                                                                           \
  m.impl(#NAME ".Scalar_out", [](const Tensor& a, const Scalar& b, Tensor& out) -> Tensor& {    \
    return to_out(out, comparison(OP, #NAME, a, at::native::wrapped_scalar_tensor(b)));         \
  });

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TP_ARITH(add, lowering::kAdd)
  TP_ARITH(sub, lowering::kSub)
  TP_BINARY(mul, ".Tensor", lowering::kMul)
  TP_BINARY(div, ".Tensor", lowering::kDiv)
  m.impl("maximum", [](const Tensor& a, const Tensor& b) {
    return to_new(arithmetic(lowering::kMaximum, "maximum", a, b));
  });
  m.impl("minimum", [](const Tensor& a, const Tensor& b) {
    return to_new(arithmetic(lowering::kMinimum, "minimum", a, b));
  });
  m.impl("maximum.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, arithmetic(lowering::kMaximum, "maximum", a, b));
  });
  m.impl("minimum.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, arithmetic(lowering::kMinimum, "minimum", a, b));
  });
  TP_COMPARE(eq, lowering::kEq)
  TP_COMPARE(ne, lowering::kNe)
  TP_COMPARE(lt, lowering::kLt)
  TP_COMPARE(le, lowering::kLe)
  TP_COMPARE(gt, lowering::kGt)
  TP_COMPARE(ge, lowering::kGe)
  m.impl("isposinf", [](const Tensor& a) {
    return to_new(is_inf_result(a, std::numeric_limits<double>::infinity()));
  });
  m.impl("isneginf", [](const Tensor& a) {
    return to_new(is_inf_result(a, -std::numeric_limits<double>::infinity()));
  });
  m.impl("isposinf.out", [](const Tensor& a, Tensor& out) -> Tensor& {
    return to_out(out, is_inf_result(a, std::numeric_limits<double>::infinity()));
  });
  m.impl("isneginf.out", [](const Tensor& a, Tensor& out) -> Tensor& {
    return to_out(out, is_inf_result(a, -std::numeric_limits<double>::infinity()));
  });
  m.impl("where.self", [](const Tensor& c, const Tensor& a, const Tensor& b) {
    if (is_float4(a) && is_float4(b)) {
      return float4_from_bytes(at::where(c, float4_bytes(a), float4_bytes(b)));
    }
    return to_new(where_result(c, a, b));
  });
  m.impl("where.self_out",
         [](const Tensor& c, const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
           const at::ScalarType t = at::result_type(a, b);
           TORCH_CHECK(out.scalar_type() == t, "Expected out type to be ", t, " but got ",
                       out.scalar_type());
           return to_out(out, where_result(c, a, b));
         });
  m.impl("neg", [](const Tensor& a) { return to_new(neg_result(a)); });
  m.impl("neg_", [](Tensor& a) -> Tensor& { return to_self(a, neg_result(a)); });
  m.impl("neg.out", [](const Tensor& a, Tensor& out) -> Tensor& {
    return to_same_dtype_out(out, neg_result(a));
  });
  m.impl("abs",
         [](const Tensor& a) { return to_new(same_type_unary_result(lowering::kAbs, "abs", a)); });
  m.impl("abs_", [](Tensor& a) -> Tensor& {
    at::assert_no_internal_overlap(a);
    return to_self(a, same_type_unary_result(lowering::kAbs, "abs_", a));
  });
  m.impl("abs.out", abs_out);
  TP_EXACT_UNARY(ceil, lowering::kCeil, same_type_unary_result)
  TP_EXACT_UNARY(floor, lowering::kFloor, same_type_unary_result)
  TP_UNARY(exp, lowering::kExp, float_unary_result)
  TP_UNARY(log, lowering::kLog, float_unary_result)
  TP_UNARY(sqrt, lowering::kSqrt, float_unary_result)
  TP_UNARY(rsqrt, lowering::kRsqrt, float_unary_result)
  TP_UNARY(tanh, lowering::kTanh, float_unary_result)
  TP_UNARY(sigmoid, lowering::kSigmoid, float_unary_result)
  TP_UNARY(sin, lowering::kSin, float_unary_result)
  TP_UNARY(cos, lowering::kCos, float_unary_result)
  TP_BITWISE(bitwise_and, lowering::kBitwiseAnd)
  TP_BITWISE(bitwise_or, lowering::kBitwiseOr)
  TP_BITWISE(bitwise_xor, lowering::kBitwiseXor)
  m.impl("remainder.Tensor", [](const Tensor& a, const Tensor& b) {
    return to_new(divided(lowering::kRemainder, "remainder", a, b));
  });
  m.impl("remainder_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    return to_self(a, divided(lowering::kRemainder, "remainder_", a, b));
  });
  m.impl("remainder.Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, divided(lowering::kRemainder, "remainder", a, b));
  });
  m.impl("remainder.Scalar_Tensor", [](const Scalar& a, const Tensor& b) {
    return to_new(divided(lowering::kRemainder, "remainder", wrap(a), b));
  });
  m.impl("fmod.Tensor", [](const Tensor& a, const Tensor& b) {
    return to_new(divided(lowering::kFmod, "fmod", a, b));
  });
  m.impl("fmod_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    return to_self(a, divided(lowering::kFmod, "fmod_", a, b));
  });
  m.impl("fmod.Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, divided(lowering::kFmod, "fmod", a, b));
  });
  m.impl("floor_divide", [](const Tensor& a, const Tensor& b) {
    return to_new(divided(lowering::kFloorDivide, "floor_divide", a, b));
  });
  m.impl("floor_divide_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    return to_self(a, divided(lowering::kFloorDivide, "floor_divide_", a, b));
  });
  m.impl("floor_divide.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, divided(lowering::kFloorDivide, "floor_divide", a, b));
  });
  m.impl("div.Tensor_mode",
         [](const Tensor& a, const Tensor& b, std::optional<c10::string_view> mode) {
           return to_new(div_mode_result("div", a, b, mode));
         });
  m.impl("div_.Tensor_mode",
         [](Tensor& a, const Tensor& b, std::optional<c10::string_view> mode) -> Tensor& {
           return to_self(a, div_mode_result("div_", a, b, mode));
         });
  m.impl("div.out_mode",
         [](const Tensor& a, const Tensor& b, std::optional<c10::string_view> mode,
            Tensor& out) -> Tensor& { return to_out(out, div_mode_result("div", a, b, mode)); });
  m.impl("pow.Tensor_Tensor", [](const Tensor& a, const Tensor& b) {
    return to_new(promoted(lowering::kPow, "pow", a, b));
  });
  m.impl("pow_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    return to_self(a, promoted(lowering::kPow, "pow_", a, b));
  });
  m.impl("pow.Tensor_Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, promoted(lowering::kPow, "pow", a, b));
  });
  m.impl("pow.Tensor_Scalar",
         [](const Tensor& a, const Scalar& e) { return to_new(pow_scalar_exponent(a, e)); });
  m.impl("pow_.Scalar", [](Tensor& a, const Scalar& e) -> Tensor& {
    return to_self(a, pow_scalar_exponent(a, e));
  });
  m.impl("pow.Tensor_Scalar_out", [](const Tensor& a, const Scalar& e, Tensor& out) -> Tensor& {
    return to_out(out, pow_scalar_exponent(a, e));
  });
  m.impl("pow.Scalar", [](const Scalar& a, const Tensor& e) {
    return to_new(promoted(lowering::kPow, "pow", wrap(a), e));
  });
  m.impl("pow.Scalar_out", [](const Scalar& a, const Tensor& e, Tensor& out) -> Tensor& {
    return to_out(out, promoted(lowering::kPow, "pow", wrap(a), e));
  });
  m.impl("atan2", [](const Tensor& a, const Tensor& b) { return to_new(atan2_result(a, b)); });
  m.impl("atan2_",
         [](Tensor& a, const Tensor& b) -> Tensor& { return to_self(a, atan2_result(a, b)); });
  m.impl("atan2.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, atan2_result(a, b));
  });
  m.impl("fmax", [](const Tensor& a, const Tensor& b) {
    return to_new(elementwise(lowering::kFmax, "fmax", {&a, &b}, at::result_type(a, b), {}));
  });
  m.impl("fmax.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, elementwise(lowering::kFmax, "fmax", {&a, &b}, at::result_type(a, b), {}));
  });
  m.impl("fmin", [](const Tensor& a, const Tensor& b) {
    return to_new(elementwise(lowering::kFmin, "fmin", {&a, &b}, at::result_type(a, b), {}));
  });
  m.impl("fmin.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, elementwise(lowering::kFmin, "fmin", {&a, &b}, at::result_type(a, b), {}));
  });
  using OptScalar = std::optional<Scalar>;
  using OptTensor = std::optional<Tensor>;
  m.impl("clamp", [](const Tensor& a, const OptScalar& lo, const OptScalar& hi) {
    return to_new(clamp_result(a, wrap_optional(lo), wrap_optional(hi)));
  });
  m.impl("clamp_", [](Tensor& a, const OptScalar& lo, const OptScalar& hi) -> Tensor& {
    return to_self(a, clamp_result(a, wrap_optional(lo), wrap_optional(hi)));
  });
  m.impl("clamp.out",
         [](const Tensor& a, const OptScalar& lo, const OptScalar& hi, Tensor& out) -> Tensor& {
           return to_same_dtype_out(out, clamp_result(a, wrap_optional(lo), wrap_optional(hi)));
         });
  m.impl("clamp.Tensor", [](const Tensor& a, const OptTensor& lo, const OptTensor& hi) {
    return to_new(clamp_result(a, lo, hi));
  });
  m.impl("clamp_.Tensor", [](Tensor& a, const OptTensor& lo, const OptTensor& hi) -> Tensor& {
    return to_self(a, clamp_result(a, lo, hi));
  });
  m.impl("clamp.Tensor_out",
         [](const Tensor& a, const OptTensor& lo, const OptTensor& hi, Tensor& out) -> Tensor& {
           return to_out(out, clamp_result(a, lo, hi));
         });
  m.impl("clamp_min", [](const Tensor& a, const Scalar& lo) {
    return to_new(clamp_result(a, wrap(lo), std::nullopt));
  });
  m.impl("clamp_min_", [](Tensor& a, const Scalar& lo) -> Tensor& {
    return to_self(a, clamp_result(a, wrap(lo), std::nullopt));
  });
  m.impl("clamp_min.out", [](const Tensor& a, const Scalar& lo, Tensor& out) -> Tensor& {
    return to_same_dtype_out(out, clamp_result(a, wrap(lo), std::nullopt));
  });
  m.impl("clamp_min.Tensor", [](const Tensor& a, const Tensor& lo) {
    return to_new(clamp_result(a, lo, std::nullopt));
  });
  m.impl("clamp_min_.Tensor", [](Tensor& a, const Tensor& lo) -> Tensor& {
    return to_self(a, clamp_result(a, lo, std::nullopt));
  });
  m.impl("clamp_min.Tensor_out", [](const Tensor& a, const Tensor& lo, Tensor& out) -> Tensor& {
    return to_out(out, clamp_result(a, lo, std::nullopt));
  });
  m.impl("clamp_max", [](const Tensor& a, const Scalar& hi) {
    return to_new(clamp_result(a, std::nullopt, wrap(hi)));
  });
  m.impl("clamp_max_", [](Tensor& a, const Scalar& hi) -> Tensor& {
    return to_self(a, clamp_result(a, std::nullopt, wrap(hi)));
  });
  m.impl("clamp_max.out", [](const Tensor& a, const Scalar& hi, Tensor& out) -> Tensor& {
    return to_same_dtype_out(out, clamp_result(a, std::nullopt, wrap(hi)));
  });
  m.impl("clamp_max.Tensor", [](const Tensor& a, const Tensor& hi) {
    return to_new(clamp_result(a, std::nullopt, hi));
  });
  m.impl("clamp_max_.Tensor", [](Tensor& a, const Tensor& hi) -> Tensor& {
    return to_self(a, clamp_result(a, std::nullopt, hi));
  });
  m.impl("clamp_max.Tensor_out", [](const Tensor& a, const Tensor& hi, Tensor& out) -> Tensor& {
    return to_out(out, clamp_result(a, std::nullopt, hi));
  });
  m.impl("lerp.Scalar", [](const Tensor& a, const Tensor& end, const Scalar& w) {
    return to_new(lerp_result(a, end, wrap(w)));
  });
  m.impl("lerp_.Scalar", [](Tensor& a, const Tensor& end, const Scalar& w) -> Tensor& {
    return to_self(a, lerp_result(a, end, wrap(w)));
  });
  m.impl("lerp.Scalar_out",
         [](const Tensor& a, const Tensor& end, const Scalar& w, Tensor& out) -> Tensor& {
           return to_out(out, lerp_result(a, end, wrap(w)));
         });
  m.impl("lerp.Tensor", [](const Tensor& a, const Tensor& end, const Tensor& w) {
    return to_new(lerp_tensor_result(a, end, w));
  });
  m.impl("lerp_.Tensor", [](Tensor& a, const Tensor& end, const Tensor& w) -> Tensor& {
    return to_self(a, lerp_tensor_result(a, end, w));
  });
  m.impl("lerp.Tensor_out",
         [](const Tensor& a, const Tensor& end, const Tensor& w, Tensor& out) -> Tensor& {
           return to_out(out, lerp_tensor_result(a, end, w));
         });
  m.impl("addcmul", [](const Tensor& a, const Tensor& t1, const Tensor& t2, const Scalar& v) {
    return to_new(addc_result(false, a, t1, t2, v));
  });
  m.impl("addcmul_", [](Tensor& a, const Tensor& t1, const Tensor& t2, const Scalar& v) -> Tensor& {
    return to_self(a, addc_result(false, a, t1, t2, v));
  });
  m.impl("addcmul.out",
         [](const Tensor& a, const Tensor& t1, const Tensor& t2, const Scalar& v,
            Tensor& out) -> Tensor& { return to_out(out, addc_result(false, a, t1, t2, v)); });
  m.impl("addcdiv", [](const Tensor& a, const Tensor& t1, const Tensor& t2, const Scalar& v) {
    return to_new(addc_result(true, a, t1, t2, v));
  });
  m.impl("addcdiv_", [](Tensor& a, const Tensor& t1, const Tensor& t2, const Scalar& v) -> Tensor& {
    return to_self(a, addc_result(true, a, t1, t2, v));
  });
  m.impl("addcdiv.out",
         [](const Tensor& a, const Tensor& t1, const Tensor& t2, const Scalar& v,
            Tensor& out) -> Tensor& { return to_out(out, addc_result(true, a, t1, t2, v)); });
  m.impl("logical_and.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, logical_result(lowering::kLogicalAnd, "logical_and", a, b));
  });
  m.impl("logical_or.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, logical_result(lowering::kLogicalOr, "logical_or", a, b));
  });
  m.impl("logical_xor.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, logical_result(lowering::kLogicalXor, "logical_xor", a, b));
  });
  m.impl("logical_not.out", [](const Tensor& a, Tensor& out) -> Tensor& {
    return to_out(out, predicate_result(lowering::kLogicalNot, "logical_not", a));
  });
  m.impl("isnan",
         [](const Tensor& a) { return to_new(predicate_result(lowering::kIsnan, "isnan", a)); });
  m.impl("signbit", [](const Tensor& a) {
    return to_new(predicate_result(lowering::kSignbit, "signbit", a));
  });
  m.impl("signbit.out", [](const Tensor& a, Tensor& out) -> Tensor& {
    TORCH_CHECK(out.scalar_type() == at::kBool, "signbit does not support non-boolean outputs.");
    return to_out(out, predicate_result(lowering::kSignbit, "signbit", a));
  });
  m.impl("nan_to_num.out",
         [](const Tensor& a, std::optional<double> nan, std::optional<double> posinf,
            std::optional<double> neginf, Tensor& out) -> Tensor& {
           return to_out(out, nan_to_num_result(a, nan, posinf, neginf));
         });
  TP_EXACT_UNARY(bitwise_not, lowering::kBitwiseNot, bitwise_not_result)
  TP_EXACT_UNARY(sign, lowering::kSign, same_type_unary_result)
  TP_EXACT_UNARY(sgn, lowering::kSign, same_type_unary_result)
  TP_EXACT_UNARY(trunc, lowering::kTrunc, same_type_unary_result)
  TP_EXACT_UNARY(round, lowering::kRound, same_type_unary_result)
  TP_EXACT_UNARY(frac, lowering::kFrac, float_only_unary_result)
  m.impl("round.decimals",
         [](const Tensor& a, int64_t d) { return to_new(round_decimals_result(a, d)); });
  m.impl("round_.decimals",
         [](Tensor& a, int64_t d) -> Tensor& { return to_self(a, round_decimals_result(a, d)); });
  m.impl("round.decimals_out", [](const Tensor& a, int64_t d, Tensor& out) -> Tensor& {
    return to_out(out, round_decimals_result(a, d));
  });
  TP_UNARY(reciprocal, lowering::kReciprocal, float_unary_result)
  TP_UNARY(erf, lowering::kErf, float_unary_result)
  TP_UNARY(erfinv, lowering::kErfinv, float_unary_result)
  TP_UNARY(expm1, lowering::kExpm1, float_unary_result)
  TP_UNARY(log1p, lowering::kLog1p, float_unary_result)
  TP_UNARY(log2, lowering::kLog2, float_unary_result)
  TP_UNARY(log10, lowering::kLog10, float_unary_result)
  TP_UNARY(exp2, lowering::kExp2, float_unary_result)
  TP_UNARY(tan, lowering::kTan, float_unary_result)
  TP_UNARY(asin, lowering::kAsin, float_unary_result)
  TP_UNARY(acos, lowering::kAcos, float_unary_result)
  TP_UNARY(atan, lowering::kAtan, float_unary_result)
  TP_UNARY(sinh, lowering::kSinh, float_unary_result)
  TP_UNARY(cosh, lowering::kCosh, float_unary_result)
  TP_UNARY(asinh, lowering::kAsinh, float_unary_result)
  TP_UNARY(acosh, lowering::kAcosh, float_unary_result)
  TP_UNARY(atanh, lowering::kAtanh, float_unary_result)
  m.impl("relu", [](const Tensor& a) { return to_new(relu_result(a)); });
  m.impl("relu_", [](Tensor& a) -> Tensor& { return to_self(a, relu_result(a)); });
  m.impl("threshold_backward", [](const Tensor& g, const Tensor& s, const Scalar& t) {
    return to_new(threshold_backward_result(g, s, t));
  });
  m.impl("threshold_backward.grad_input",
         [](const Tensor& g, const Tensor& s, const Scalar& t, Tensor& out) -> Tensor& {
           return to_out(out, threshold_backward_result(g, s, t));
         });
}

}  // namespace torch_pjrt::aten

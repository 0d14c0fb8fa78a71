// Elementwise kernels: arithmetic with PyTorch type promotion and broadcasting, comparisons,
// where, unary math, bitwise ops, relu and its backward; each in functional, in-place and out=
// form.
#include "lowering/elementwise.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;

// Binary arithmetic: computes in the promoted type; `alpha` scales the second operand.
OpResult arithmetic(const graph::OpDef& op, const char* name, const Tensor& a, const Tensor& b,
                    std::optional<Scalar> alpha = std::nullopt) {
  at::ScalarType dtype = at::result_type(a, b);
  graph::Attrs attrs;
  if (alpha) {
    TORCH_CHECK(!alpha->isFloatingPoint() || at::isFloatingType(dtype),
                "For integral input tensors, argument alpha must not be a floating point number.");
    if (!(alpha->isIntegral(true) && alpha->toLong() == 1)) attrs.floats = {alpha->toDouble()};
  }
  if (&op == &lowering::kSub) {
    TORCH_CHECK(a.scalar_type() != at::kBool || b.scalar_type() != at::kBool,
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                "`^` or `logical_xor()` operator instead.");
  }
  if (&op == &lowering::kDiv && at::isIntegralType(dtype, /*includeBool=*/true)) {
    dtype = at::typeMetaToScalarType(at::get_default_dtype());
  }
  return elementwise(op, name, {&a, &b}, dtype, std::move(attrs));
}

// Comparisons compute in the promoted type and return bool.
OpResult comparison(const graph::OpDef& op, const char* name, const Tensor& a, const Tensor& b) {
  return elementwise(op, name, {&a, &b}, at::kBool, {}, at::result_type(a, b));
}

OpResult neg_result(const Tensor& a) {
  TORCH_CHECK(a.scalar_type() != at::kBool,
              "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to "
              "invert a mask, use the `~` or `logical_not()` operator instead.");
  return elementwise(lowering::kNeg, "neg", {&a}, a.scalar_type(), {});
}

// Unary math: integer inputs compute in the default float type, as in PyTorch.
OpResult float_unary_result(const graph::OpDef& op, const char* name, const Tensor& a) {
  const at::ScalarType dtype = at::isIntegralType(a.scalar_type(), /*includeBool=*/true)
                                   ? at::typeMetaToScalarType(at::get_default_dtype())
                                   : a.scalar_type();
  return elementwise(op, name, {&a}, dtype, {});
}

// Unary ops that keep the input's dtype.
OpResult same_type_unary_result(const graph::OpDef& op, const char* name, const Tensor& a) {
  TORCH_CHECK(a.scalar_type() != at::kBool || &op != &lowering::kAbs,
              "abs_cpu\" not implemented for 'Bool'");
  return elementwise(op, name, {&a}, a.scalar_type(), {});
}

OpResult bitwise_result(const graph::OpDef& op, const char* name, const Tensor& a,
                        const Tensor& b) {
  const at::ScalarType dtype = at::result_type(a, b);
  TORCH_CHECK(at::isIntegralType(dtype, /*includeBool=*/true), "\"", name,
              "_cpu\" not implemented for '", c10::toString(dtype), "'");
  return elementwise(op, name, {&a, &b}, dtype, {});
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

#define TP_BITWISE(NAME, OP)                                                                 \
  m.impl(#NAME ".Tensor", [](const Tensor& a, const Tensor& b) {                             \
    return to_new(bitwise_result(OP, #NAME, a, b));                                          \
  });                                                                                        \
  m.impl(#NAME "_.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {                       \
    return to_self(a, bitwise_result(OP, #NAME, a, b));                                      \
  });                                                                                        \
  m.impl(#NAME ".Tensor_out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& { \
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
  TP_COMPARE(eq, lowering::kEq)
  TP_COMPARE(ne, lowering::kNe)
  TP_COMPARE(lt, lowering::kLt)
  TP_COMPARE(le, lowering::kLe)
  TP_COMPARE(gt, lowering::kGt)
  TP_COMPARE(ge, lowering::kGe)
  m.impl("where.self", [](const Tensor& c, const Tensor& a, const Tensor& b) {
    return to_new(where_result(c, a, b));
  });
  m.impl("where.self_out",
         [](const Tensor& c, const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
           return to_out(out, where_result(c, a, b));
         });
  m.impl("neg", [](const Tensor& a) { return to_new(neg_result(a)); });
  m.impl("neg_", [](Tensor& a) -> Tensor& { return to_self(a, neg_result(a)); });
  m.impl("neg.out",
         [](const Tensor& a, Tensor& out) -> Tensor& { return to_out(out, neg_result(a)); });
  TP_UNARY(abs, lowering::kAbs, same_type_unary_result)
  TP_UNARY(ceil, lowering::kCeil, same_type_unary_result)
  TP_UNARY(floor, lowering::kFloor, same_type_unary_result)
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

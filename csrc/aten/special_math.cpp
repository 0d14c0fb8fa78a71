// Elementwise math beyond the basics (lowering/special_math.h): copysign, hypot, logaddexp(2),
// xlogy/xlog1py, heaviside, sinc, logit, erfc and the bit shifts, with PyTorch's type promotion
// and errors; each in functional, in-place and out= form where PyTorch has them.
#include "lowering/special_math.h"

#include <ATen/ATen.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include <limits>
#include <string>
#include <string_view>

#include "aten/dtype_rules.h"
#include "aten/op_result.h"
#include "lowering/complex.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;

// Integer operands compute in the default float type (copysign, xlogy, xlog1py); complex ones raise
// the CPU kernel's error.
OpResult float_binary(const graph::OpDef& op, const char* name, const Tensor& a, const Tensor& b) {
  const at::ScalarType dtype = float_type(binary_result_type(a, b));
  check_implemented(!at::isComplexType(dtype), (std::string(name) + "_cpu").c_str(), dtype);
  return elementwise(op, name, {&a, &b}, dtype, {});
}

// Defined on floating types only (hypot, logaddexp, logaddexp2).
OpResult floating_binary(const graph::OpDef& op, const char* kernel, const Tensor& a,
                         const Tensor& b) {
  const at::ScalarType dtype = binary_result_type(a, b);
  check_implemented(at::isFloatingType(dtype), kernel, dtype);
  return elementwise(op, kernel, {&a, &b}, dtype, {});
}

// logaddexp: floating types, and complex ones on their own lowering.
OpResult logaddexp_result(const Tensor& a, const Tensor& b) {
  const at::ScalarType dtype = at::result_type(a, b);
  if (at::isComplexType(dtype)) {
    return elementwise(lowering::kComplexLogaddexp, "logaddexp", {&a, &b}, dtype, {});
  }
  return floating_binary(lowering::kLogaddexp, "logaddexp_cpu", a, b);
}

// As the CPU's meta function, which checks an out= tensor's dtype too.
void check_heaviside(const Tensor& a, const Tensor& values, const Tensor* out = nullptr) {
  TORCH_CHECK(!a.is_complex() && !values.is_complex() && !(out && out->is_complex()),
              "heaviside is not yet implemented for complex tensors.");
  TORCH_CHECK(
      a.scalar_type() == values.scalar_type() && (!out || out->scalar_type() == a.scalar_type()),
      "heaviside is not yet implemented for tensors with different dtypes.");
}

OpResult heaviside_result(const Tensor& a, const Tensor& values) {
  check_heaviside(a, values);
  return elementwise(lowering::kHeaviside, "heaviside", {&a, &values}, a.scalar_type(), {});
}

// Complex inputs: only sinc is defined for them on the CPU; the others raise its error, named after
// its kernel.
OpResult float_unary(const graph::OpDef& op, const char* name, const Tensor& a) {
  if (&op != &lowering::kSinc) {
    const std::string_view n = name;
    check_implemented(!a.is_complex(),
                      n == "erfc"     ? "erfc_vml_cpu"
                      : n == "lgamma" ? "lgamma_vml_cpu"
                                      : name,
                      a.scalar_type());
  }
  return elementwise(op, name, {&a}, float_type(a.scalar_type()), {});
}

OpResult logit_result(const Tensor& a, std::optional<double> eps) {
  graph::Attrs attrs;
  if (eps && *eps >= 0) attrs.floats = {*eps};
  return elementwise(lowering::kLogit, "logit", {&a}, float_type(a.scalar_type()),
                     std::move(attrs));
}

OpResult shift(bool left, const Tensor& a, const Tensor& b) {
  const at::ScalarType dtype = binary_result_type(a, b);
  check_implemented(at::isIntegralType(dtype, /*includeBool=*/false),
                    left ? "lshift_cpu" : "rshift_cpu", dtype);
  return elementwise(left ? lowering::kShiftLeft : lowering::kShiftRight,
                     left ? "bitwise_left_shift" : "bitwise_right_shift", {&a, &b}, dtype, {});
}

Tensor wrap(const Scalar& s) { return at::native::wrapped_scalar_tensor(s); }

// PyTorch's logit_backward: dy / (x (1 - x)); with eps, 0 outside [eps, 1 - eps], else NaN
// outside [0, 1]. Composed of the device's own kernels.
Tensor logit_backward(const Tensor& grad, const Tensor& x, std::optional<double> eps) {
  const Tensor r = grad / (x * (1 - x));
  if (eps && *eps >= 0) return at::where((x < *eps).logical_or_(x > 1 - *eps), 0, r);
  return at::where((x < 0).logical_or_(x > 1), std::numeric_limits<double>::quiet_NaN(), r);
}

}  // namespace

// Functional, in-place and out= forms of a binary op whose result comes from RESULT(a, b).
#define TP_BINARY_OP(NAME, FUNCTIONAL, INPLACE, OUT, RESULT)                                 \
  m.impl(#NAME FUNCTIONAL, [](const Tensor& a, const Tensor& b) { return to_new(RESULT); }); \
  m.impl(#NAME "_" INPLACE, [](Tensor& a, const Tensor& b) -> Tensor& {                      \
    check_binary_destination(a, a, b);                                                       \
    return to_self(a, RESULT);                                                               \
  });                                                                                        \
  m.impl(#NAME OUT, [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {           \
    check_binary_destination(out, a, b);                                                     \
    return to_out(out, RESULT);                                                              \
  });

#define TP_FLOAT_UNARY(NAME, OP)                                                                 \
  m.impl(#NAME, [](const Tensor& a) { return to_new(float_unary(OP, #NAME, a)); });              \
  m.impl(#NAME "_", [](Tensor& a) -> Tensor& { return to_self(a, float_unary(OP, #NAME, a)); }); \
  m.impl(#NAME ".out", [](const Tensor& a, Tensor& out) -> Tensor& {                             \
    return to_out(out, float_unary(OP, #NAME, a));                                               \
  });

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TP_BINARY_OP(copysign, ".Tensor", ".Tensor", ".out",
               float_binary(lowering::kCopysign, "copysign", a, b))
  TP_BINARY_OP(hypot, "", "", ".out", floating_binary(lowering::kHypot, "hypot_cpu", a, b))
  TP_BINARY_OP(xlogy, ".Tensor", ".Tensor", ".OutTensor",
               float_binary(lowering::kXlogy, "xlogy", a, b))
  m.impl("heaviside",
         [](const Tensor& a, const Tensor& b) { return to_new(heaviside_result(a, b)); });
  m.impl("heaviside_", [](Tensor& a, const Tensor& b) -> Tensor& {
    check_binary_destination(a, a, b);
    return to_self(a, heaviside_result(a, b));
  });
  m.impl("heaviside.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    check_heaviside(a, b, &out);
    check_binary_destination(out, a, b);
    return to_out(out, heaviside_result(a, b));
  });
  TP_BINARY_OP(bitwise_left_shift, ".Tensor", ".Tensor", ".Tensor_out", shift(true, a, b))
  TP_BINARY_OP(bitwise_right_shift, ".Tensor", ".Tensor", ".Tensor_out", shift(false, a, b))
  m.impl("logaddexp",
         [](const Tensor& a, const Tensor& b) { return to_new(logaddexp_result(a, b)); });
  m.impl("logaddexp.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, logaddexp_result(a, b));
  });
  m.impl("logaddexp2", [](const Tensor& a, const Tensor& b) {
    return to_new(floating_binary(lowering::kLogaddexp2, "logaddexp2_cpu", a, b));
  });
  m.impl("logaddexp2.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, floating_binary(lowering::kLogaddexp2, "logaddexp2_cpu", a, b));
  });
  m.impl("special_xlog1py", [](const Tensor& a, const Tensor& b) {
    return to_new(float_binary(lowering::kXlog1py, "xlog1py", a, b));
  });
  m.impl("special_xlog1py.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, float_binary(lowering::kXlog1py, "xlog1py", a, b));
  });
  // The shift operators: tensor or scalar shift amounts, functional and in place.
  m.impl("__lshift__.Tensor",
         [](const Tensor& a, const Tensor& b) { return to_new(shift(true, a, b)); });
  m.impl("__lshift__.Scalar",
         [](const Tensor& a, const Scalar& b) { return to_new(shift(true, a, wrap(b))); });
  m.impl("__ilshift__.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    check_binary_destination(a, a, b);  // TensorIterator's overlap checks come before the dtype's
    return to_self(a, shift(true, a, b));
  });
  m.impl("__ilshift__.Scalar",
         [](Tensor& a, const Scalar& b) -> Tensor& { return to_self(a, shift(true, a, wrap(b))); });
  m.impl("__rshift__.Tensor",
         [](const Tensor& a, const Tensor& b) { return to_new(shift(false, a, b)); });
  m.impl("__rshift__.Scalar",
         [](const Tensor& a, const Scalar& b) { return to_new(shift(false, a, wrap(b))); });
  m.impl("__irshift__.Tensor", [](Tensor& a, const Tensor& b) -> Tensor& {
    check_binary_destination(a, a, b);  // TensorIterator's overlap checks come before the dtype's
    return to_self(a, shift(false, a, b));
  });
  m.impl("__irshift__.Scalar", [](Tensor& a, const Scalar& b) -> Tensor& {
    return to_self(a, shift(false, a, wrap(b)));
  });
  TP_FLOAT_UNARY(sinc, lowering::kSinc)
  TP_FLOAT_UNARY(erfc, lowering::kErfc)
  TP_FLOAT_UNARY(lgamma, lowering::kLgamma)
  TP_FLOAT_UNARY(digamma, lowering::kDigamma)
  m.impl("logit",
         [](const Tensor& a, std::optional<double> eps) { return to_new(logit_result(a, eps)); });
  m.impl("logit_", [](Tensor& a, std::optional<double> eps) -> Tensor& {
    return to_self(a, logit_result(a, eps));
  });
  m.impl("logit.out", [](const Tensor& a, std::optional<double> eps, Tensor& out) -> Tensor& {
    return to_out(out, logit_result(a, eps));
  });
  m.impl("logit_backward", logit_backward);
}

}  // namespace torch_pjrt::aten

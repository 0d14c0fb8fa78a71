// torch.special functions (lowering/special_functions.h) with PyTorch's type promotion (integer
// and bool inputs compute in the default float type) and errors; functional and out= forms.
#include "lowering/special_functions.h"

#include <ATen/ATen.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include "aten/dtype_rules.h"
#include "aten/op_result.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;

// The polynomials: float32/float64 only (PyTorch's CPU kernels have no f16/bf16 form).
OpResult polynomial(const graph::OpDef& op, const char* name, const Tensor& x, const Tensor& n) {
  const at::ScalarType dtype = float_type(at::result_type(x, n));
  check_implemented(dtype == at::kFloat || dtype == at::kDouble, std::string(name) + "_cpu", dtype);
  return elementwise(op, name, {&x, &n}, dtype, {});
}

OpResult integer_binary(const graph::OpDef& op, const char* name, const Tensor& a,
                        const Tensor& b) {
  const at::ScalarType dtype = at::result_type(a, b);
  check_implemented(at::isIntegralType(dtype, /*includeBool=*/false), std::string(name) + "_cpu",
                    dtype);
  return elementwise(op, name, {&a, &b}, dtype, {});
}

OpResult next_after(const Tensor& a, const Tensor& b) {
  const at::ScalarType dtype = at::result_type(a, b);
  check_implemented(at::isFloatingType(dtype), "nextafter_cpu", dtype);
  return elementwise(lowering::kNextafter, "nextafter", {&a, &b}, dtype, {});
}

OpResult float_unary(const graph::OpDef& op, const char* name, const Tensor& x) {
  return elementwise(op, name, {&x}, float_type(x.scalar_type()), {});
}

Tensor wrap(const Scalar& s) { return at::native::wrapped_scalar_tensor(s); }

}  // namespace

// special_NAME(x, n) with tensor or scalar x and n, functional and out=.
#define TP_POLYNOMIAL(NAME, OP)                                                                  \
  m.impl("special_" #NAME,                                                                       \
         [](const Tensor& x, const Tensor& n) { return to_new(polynomial(OP, #NAME, x, n)); });  \
  m.impl("special_" #NAME ".out", [](const Tensor& x, const Tensor& n, Tensor& out) -> Tensor& { \
    return to_out(out, polynomial(OP, #NAME, x, n));                                             \
  });                                                                                            \
  m.impl("special_" #NAME ".x_scalar", [](const Scalar& x, const Tensor& n) {                    \
    return to_new(polynomial(OP, #NAME, wrap(x), n));                                            \
  });                                                                                            \
  m.impl("special_" #NAME ".x_scalar_out",                                                       \
         [](const Scalar& x, const Tensor& n, Tensor& out) -> Tensor& {                          \
           return to_out(out, polynomial(OP, #NAME, wrap(x), n));                                \
         });                                                                                     \
  m.impl("special_" #NAME ".n_scalar", [](const Tensor& x, const Scalar& n) {                    \
    return to_new(polynomial(OP, #NAME, x, wrap(n)));                                            \
  });                                                                                            \
  m.impl("special_" #NAME ".n_scalar_out",                                                       \
         [](const Tensor& x, const Scalar& n, Tensor& out) -> Tensor& {                          \
           return to_out(out, polynomial(OP, #NAME, x, wrap(n)));                                \
         });

#define TP_UNARY(NAME, OP)                                                        \
  m.impl(NAME, [](const Tensor& x) { return to_new(float_unary(OP, NAME, x)); }); \
  m.impl(NAME ".out", [](const Tensor& x, Tensor& out) -> Tensor& {               \
    return to_out(out, float_unary(OP, NAME, x));                                 \
  });

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TP_POLYNOMIAL(chebyshev_polynomial_t, lowering::kChebyshevT)
  TP_POLYNOMIAL(chebyshev_polynomial_u, lowering::kChebyshevU)
  TP_POLYNOMIAL(chebyshev_polynomial_v, lowering::kChebyshevV)
  TP_POLYNOMIAL(chebyshev_polynomial_w, lowering::kChebyshevW)
  TP_POLYNOMIAL(shifted_chebyshev_polynomial_t, lowering::kShiftedChebyshevT)
  TP_POLYNOMIAL(shifted_chebyshev_polynomial_u, lowering::kShiftedChebyshevU)
  TP_POLYNOMIAL(shifted_chebyshev_polynomial_v, lowering::kShiftedChebyshevV)
  TP_POLYNOMIAL(shifted_chebyshev_polynomial_w, lowering::kShiftedChebyshevW)
  TP_POLYNOMIAL(hermite_polynomial_h, lowering::kHermiteH)
  TP_POLYNOMIAL(hermite_polynomial_he, lowering::kHermiteHe)
  TP_POLYNOMIAL(laguerre_polynomial_l, lowering::kLaguerreL)
  TP_POLYNOMIAL(legendre_polynomial_p, lowering::kLegendreP)
  m.impl("nextafter", [](const Tensor& a, const Tensor& b) { return to_new(next_after(a, b)); });
  m.impl("nextafter_",
         [](Tensor& a, const Tensor& b) -> Tensor& { return to_self(a, next_after(a, b)); });
  m.impl("nextafter.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, next_after(a, b));
  });
  TP_UNARY("special_entr", lowering::kEntr)
  TP_UNARY("special_i0e", lowering::kI0e)
  TP_UNARY("special_i1", lowering::kI1)
  TP_UNARY("special_i1e", lowering::kI1e)
  TP_UNARY("i0", lowering::kI0)
  m.impl("i0_",
         [](Tensor& x) -> Tensor& { return to_self(x, float_unary(lowering::kI0, "i0", x)); });
  m.impl("gcd", [](const Tensor& a, const Tensor& b) {
    return to_new(integer_binary(lowering::kGcd, "gcd", a, b));
  });
  m.impl("gcd_", [](Tensor& a, const Tensor& b) -> Tensor& {
    return to_self(a, integer_binary(lowering::kGcd, "gcd", a, b));
  });
  m.impl("gcd.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, integer_binary(lowering::kGcd, "gcd", a, b));
  });
  m.impl("lcm", [](const Tensor& a, const Tensor& b) {
    return to_new(integer_binary(lowering::kLcm, "lcm", a, b));
  });
  m.impl("lcm_", [](Tensor& a, const Tensor& b) -> Tensor& {
    return to_self(a, integer_binary(lowering::kLcm, "lcm", a, b));
  });
  m.impl("lcm.out", [](const Tensor& a, const Tensor& b, Tensor& out) -> Tensor& {
    return to_out(out, integer_binary(lowering::kLcm, "lcm", a, b));
  });
}

}  // namespace torch_pjrt::aten

// zeta, polygamma and the incomplete gamma functions (lowering/gamma_functions.h) with PyTorch's
// type promotion (integer and bool inputs compute in the default float type where the CPU accepts
// them) and errors; functional, in-place, out= and scalar forms as aten has them.
#include "lowering/gamma_functions.h"

#include <ATen/ATen.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include "aten/dtype_rules.h"
#include "aten/op_result.h"
#include "lowering/special_math.h"

namespace torch_pjrt::aten {
namespace {

using at::Scalar;
using at::Tensor;

// float32 and float64 only, as PyTorch's CPU kernel.
OpResult zeta_result(const Tensor& x, const Tensor& q) {
  const at::ScalarType dtype = float_type(at::result_type(x, q));
  check_implemented(dtype == at::kFloat || dtype == at::kDouble, "zeta_cpu", dtype);
  return elementwise(lowering::kZeta, "special_zeta", {&x, &q}, dtype, {});
}

// n == 0 is digamma; the CPU names its kernels digamma, trigamma and polygamma in its errors.
OpResult polygamma_result(int64_t n, const Tensor& x) {
  TORCH_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  const at::ScalarType dtype = float_type(x.scalar_type());
  check_implemented(!at::isComplexType(dtype),
                    n == 0   ? "digamma"
                    : n == 1 ? "trigamma"
                             : "polygamma",
                    dtype);
  if (n == 0) return elementwise(lowering::kDigamma, "polygamma", {&x}, dtype, {});
  graph::Attrs attrs;
  attrs.floats = {static_cast<double>(n)};
  return elementwise(lowering::kPolygamma, "polygamma", {&x}, dtype, std::move(attrs));
}

// Floating types only (no integer promotion), as PyTorch's CPU kernels.
OpResult igamma_result(bool upper, const Tensor& a, const Tensor& x) {
  const at::ScalarType dtype = at::result_type(a, x);
  check_implemented(at::isFloatingType(dtype), upper ? "igammac_cpu" : "igamma_cpu", dtype);
  return elementwise(upper ? lowering::kIgammac : lowering::kIgamma, upper ? "igammac" : "igamma",
                     {&a, &x}, dtype, {});
}

Tensor wrap(const Scalar& s) { return at::native::wrapped_scalar_tensor(s); }

// mvlgamma's functional form is composed of device ops; out= copies it, with the CPU's check.
Tensor& mvlgamma_out(const Tensor& x, int64_t p, Tensor& out) {
  const Tensor r = at::mvlgamma(x, p);
  TORCH_CHECK(at::canCast(r.scalar_type(), out.scalar_type()), "mvlgamma: result type ",
              x.scalar_type(), " can't be cast to the desired output type ", r.scalar_type());
  return copy_to_out(out, r);
}

}  // namespace

// Functional, in-place and out= forms of igamma or igammac.
#define TP_IGAMMA(NAME, UPPER)                                                                 \
  m.impl(#NAME,                                                                                \
         [](const Tensor& a, const Tensor& x) { return to_new(igamma_result(UPPER, a, x)); }); \
  m.impl(#NAME "_", [](Tensor& a, const Tensor& x) -> Tensor& {                                \
    return to_self(a, igamma_result(UPPER, a, x));                                             \
  });                                                                                          \
  m.impl(#NAME ".out", [](const Tensor& a, const Tensor& x, Tensor& out) -> Tensor& {          \
    return to_out(out, igamma_result(UPPER, a, x));                                            \
  });

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("special_zeta",
         [](const Tensor& x, const Tensor& q) { return to_new(zeta_result(x, q)); });
  m.impl("special_zeta.out", [](const Tensor& x, const Tensor& q, Tensor& out) -> Tensor& {
    return to_out(out, zeta_result(x, q));
  });
  m.impl("special_zeta.self_scalar",
         [](const Scalar& x, const Tensor& q) { return to_new(zeta_result(wrap(x), q)); });
  m.impl("special_zeta.self_scalar_out",
         [](const Scalar& x, const Tensor& q, Tensor& out) -> Tensor& {
           return to_out(out, zeta_result(wrap(x), q));
         });
  m.impl("special_zeta.other_scalar",
         [](const Tensor& x, const Scalar& q) { return to_new(zeta_result(x, wrap(q))); });
  m.impl("special_zeta.other_scalar_out",
         [](const Tensor& x, const Scalar& q, Tensor& out) -> Tensor& {
           return to_out(out, zeta_result(x, wrap(q)));
         });
  m.impl("polygamma", [](int64_t n, const Tensor& x) { return to_new(polygamma_result(n, x)); });
  m.impl("polygamma_",
         [](Tensor& x, int64_t n) -> Tensor& { return to_self(x, polygamma_result(n, x)); });
  m.impl("polygamma.out", [](int64_t n, const Tensor& x, Tensor& out) -> Tensor& {
    return to_out(out, polygamma_result(n, x));
  });
  m.impl("mvlgamma.out", mvlgamma_out);
  TP_IGAMMA(igamma, false)
  TP_IGAMMA(igammac, true)
}

}  // namespace torch_pjrt::aten

// The Bessel family of torch.special (lowering/bessel_functions.h; the modified I0, I1 reuse
// lowering::kI0, kI1): float32/float64 only, as PyTorch's CPU kernels; integer and bool inputs
// compute in the default float type. Functional and out= forms.
#include "lowering/bessel_functions.h"

#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>

#include "aten/dtype_rules.h"
#include "aten/op_result.h"
#include "lowering/special_functions.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

OpResult bessel(const graph::OpDef& op, const char* name, const Tensor& x) {
  const at::ScalarType dtype = float_type(x.scalar_type());
  check_implemented(dtype == at::kFloat || dtype == at::kDouble, std::string(name) + "_cpu", dtype);
  return elementwise(op, name, {&x}, dtype, {});
}

}  // namespace

#define TP_BESSEL(NAME, OP)                                                               \
  m.impl("special_" #NAME, [](const Tensor& x) { return to_new(bessel(OP, #NAME, x)); }); \
  m.impl("special_" #NAME ".out", [](const Tensor& x, Tensor& out) -> Tensor& {           \
    return to_out(out, bessel(OP, #NAME, x));                                             \
  });

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TP_BESSEL(bessel_j0, lowering::kBesselJ0)
  TP_BESSEL(bessel_j1, lowering::kBesselJ1)
  TP_BESSEL(bessel_y0, lowering::kBesselY0)
  TP_BESSEL(bessel_y1, lowering::kBesselY1)
  TP_BESSEL(modified_bessel_i0, lowering::kI0)
  TP_BESSEL(modified_bessel_i1, lowering::kI1)
  TP_BESSEL(modified_bessel_k0, lowering::kModifiedBesselK0)
  TP_BESSEL(modified_bessel_k1, lowering::kModifiedBesselK1)
  TP_BESSEL(scaled_modified_bessel_k0, lowering::kScaledModifiedBesselK0)
  TP_BESSEL(scaled_modified_bessel_k1, lowering::kScaledModifiedBesselK1)
  TP_BESSEL(spherical_bessel_j0, lowering::kSphericalBesselJ0)
  TP_BESSEL(airy_ai, lowering::kAiryAi)
}

}  // namespace torch_pjrt::aten

// Complex-number kernels: view_as_real / view_as_complex (views sharing the storage, read through
// tensor_bridge's reinterpretation of storages), conj_physical, torch.complex, torch.polar and
// angle. PyTorch's lazy conjugate and negative bits are resolved by its own fallbacks before other
// kernels run, and by copy_ (copy.cpp), which applies them.
#include "lowering/complex.h"

#include <ATen/ATen.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

OpResult conj_result(const Tensor& self) {
  return elementwise(lowering::kConj, "conj_physical", {&self}, self.scalar_type(), {});
}

// torch.complex and torch.polar: two real tensors of one floating type and an out= of the matching
// complex type (PyTorch's checks).
OpResult parts_result(const graph::OpDef& op, const char* name, const Tensor& a, const Tensor& b,
                      const Tensor& out) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Expected object of scalar type ",
              a.scalar_type(), " but got scalar type ", b.scalar_type(), " for second argument");
  TORCH_CHECK(a.scalar_type() == at::kFloat || a.scalar_type() == at::kDouble ||
                  a.scalar_type() == at::kHalf,
              "Expected both inputs to be Half, Float or Double tensors but got ", a.scalar_type(),
              " and ", b.scalar_type());
  const at::ScalarType result = c10::toComplexType(a.scalar_type());
  TORCH_CHECK(out.scalar_type() == result, "Expected object of scalar type ", result,
              " but got scalar type ", out.scalar_type(), " for argument 'out'");
  return elementwise(op, name, {&a, &b}, result, {});
}

OpResult angle_result(const Tensor& self) {
  const at::ScalarType t = self.scalar_type();
  const at::ScalarType out = at::isComplexType(t)                          ? c10::toRealValueType(t)
                             : at::isIntegralType(t, /*includeBool=*/true) ? at::kFloat
                                                                           : t;
  return elementwise(lowering::kAngle, "angle", {&self}, out, {});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("view_as_real", at::native::view_as_real);
  m.impl("view_as_complex", at::native::view_as_complex);
  m.impl("conj_physical.out",
         [](const Tensor& self, Tensor& out) -> Tensor& { return to_out(out, conj_result(self)); });
  m.impl("conj_physical_",
         [](Tensor& self) -> Tensor& { return to_self(self, conj_result(self)); });
  m.impl("complex.out", [](const Tensor& re, const Tensor& im, Tensor& out) -> Tensor& {
    return to_out(out, parts_result(lowering::kComplex, "complex", re, im, out));
  });
  m.impl("polar.out", [](const Tensor& abs, const Tensor& angle, Tensor& out) -> Tensor& {
    return to_out(out, parts_result(lowering::kPolar, "polar", abs, angle, out));
  });
  m.impl("angle", [](const Tensor& self) { return to_new(angle_result(self)); });
  m.impl("angle.out", [](const Tensor& self, Tensor& out) -> Tensor& {
    return to_out(out, angle_result(self));
  });
}

}  // namespace torch_pjrt::aten

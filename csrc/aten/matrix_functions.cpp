// linalg_matrix_exp (and its out=) on floating and complex types, by lowering's kMatrixExp.
// Autograd's formula evaluates matrix_exp of a block matrix, which comes back here.
#include "lowering/matrix_functions.h"

#include <ATen/ATen.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <torch/library.h>

#include "aten/device_checks.h"
#include "aten/op_result.h"
#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

Tensor matrix_exponential(const Tensor& a) {
  at::native::squareCheckInputs(a, "linalg.matrix_exp");
  at::native::checkFloatingOrComplex(a, "linalg.matrix_exp");
  const int device = common_device("linalg_matrix_exp", {&a});
  auto value = graph::record1(lowering::kMatrixExp, {read(a)}, {},
                              tensor_type(a.scalar_type(), a.sizes()), device);
  Tensor out = make_tensor(value, a.scalar_type(), device);
  finish_op();
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_matrix_exp", matrix_exponential);
  m.impl("linalg_matrix_exp.out", [](const Tensor& a, Tensor& out) -> Tensor& {
    return copy_to_out(out, matrix_exponential(a));
  });
}

}  // namespace torch_pjrt::aten

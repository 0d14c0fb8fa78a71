// frexp (lowering/frexp.h): floating inputs only, the mantissa in the input's dtype and an int32
// exponent, as PyTorch's CPU kernel; functional and out= with its dtype checks.
#include "lowering/frexp.h"

#include <ATen/ATen.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <tuple>

#include "aten/tensor_bridge.h"
#include "graph/graph.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

std::vector<graph::DataPtr> frexp_values(const Tensor& x) {
  TORCH_CHECK(at::isFloatingType(x.scalar_type()),
              "torch.frexp() only supports floating-point dtypes");
  const int device = common_device("frexp", {&x});
  return graph::record(lowering::kFrexp, {read(x)}, {},
                       {tensor_type(x.scalar_type(), x.sizes()), tensor_type(at::kInt, x.sizes())},
                       device);
}

std::tuple<Tensor, Tensor> frexp(const Tensor& x) {
  std::vector<graph::DataPtr> values = frexp_values(x);
  const int device = device_index(x);
  Tensor mantissa = make_tensor(values[0], x.scalar_type(), device);
  Tensor exponent = make_tensor(values[1], at::kInt, device);
  finish_op();
  return {mantissa, exponent};
}

std::tuple<Tensor&, Tensor&> frexp_out(const Tensor& x, Tensor& mantissa, Tensor& exponent) {
  TORCH_CHECK(mantissa.dtype() == x.dtype(), "torch.frexp() expects mantissa to have dtype ",
              x.dtype(), " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt,
              "torch.frexp() expects exponent to have int dtype but got ", exponent.dtype());
  common_device("frexp", {&x, &mantissa, &exponent});
  std::vector<graph::DataPtr> values = frexp_values(x);
  at::native::resize_output(mantissa, x.sizes());
  at::native::resize_output(exponent, x.sizes());
  write(mantissa, values[0]);
  write(exponent, values[1]);
  finish_op();
  return {mantissa, exponent};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("frexp.Tensor", frexp);
  m.impl("frexp.Tensor_out", frexp_out);
}

}  // namespace torch_pjrt::aten

// softmax and log_softmax (the _softmax family the composites call) and their backward;
// _safe_softmax (scaled_dot_product_attention's softmax) as one op.
#include <ATen/ATen.h>
#include <ATen/ops/_safe_softmax_native.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "lowering/reductions.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

OpResult along_dim(const graph::OpDef& op, const char* name, std::vector<const Tensor*> inputs,
                   int64_t dim, at::ScalarType dtype) {
  const Tensor& self = *inputs[0];
  const int device = common_device(name, inputs);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  std::vector<graph::DataPtr> operands;
  for (const Tensor* t : inputs) operands.push_back(read(*t));
  // A 0-dim tensor is treated as one element along a dimension of size 1.
  auto value = graph::record1(op, std::move(operands), {{self.dim() == 0 ? 0 : d}, {}},
                              tensor_type(dtype, self.sizes()), device);
  return {value, dtype, self.sizes().vec(), device};
}

OpResult softmax_result(const graph::OpDef& op, const char* name, const Tensor& self, int64_t dim,
                        bool half_to_float) {
  TORCH_CHECK(!half_to_float, name, " with half to float conversion is not supported on CPU");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());  // before the dtype, as on the CPU
  TORCH_CHECK_NOT_IMPLEMENTED(
      at::isFloatingType(self.scalar_type()), "\"", name,
      self.dim() <= 1 || d == self.dim() - 1 ? "_lastdim_kernel_impl" : "_kernel_impl",
      "\" not implemented for '", c10::toString(self.scalar_type()), "'");
  return along_dim(op, name, {&self}, dim, self.scalar_type());
}

OpResult softmax_backward_result(const graph::OpDef& op, const char* name, const Tensor& grad,
                                 const Tensor& output, int64_t dim, at::ScalarType input_dtype) {
  TORCH_CHECK(grad.sizes() == output.sizes(), name,
              ": grad_output and output must have the same shape");
  return along_dim(op, name, {&grad, &output}, dim, input_dtype);
}

// _safe_softmax(self, dim, dtype): softmax(self, dim, dtype) with 0 for the rows of `self` that are
// all -inf. The rows are found in the converted input, which has the same -inf elements when the
// conversion widens (or there is none); a narrowing one can make new ones (1e39 as float16), so it
// takes the composite's path.
Tensor safe_softmax(const Tensor& self, int64_t dim, std::optional<at::ScalarType> dtype) {
  if (dtype && *dtype != self.scalar_type() &&
      !(at::isFloatingType(self.scalar_type()) && at::isFloatingType(*dtype) &&
        c10::elementSize(*dtype) > c10::elementSize(self.scalar_type()))) {
    return at::native::_safe_softmax(self, dim, dtype);
  }
  const Tensor x = dtype ? self.to(*dtype) : self;
  return to_new(softmax_result(lowering::kSafeSoftmax, "softmax", x, dim, false));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_safe_softmax", safe_softmax);
  m.impl("_softmax", [](const Tensor& self, int64_t dim, bool half_to_float) {
    return to_new(softmax_result(lowering::kSoftmax, "softmax", self, dim, half_to_float));
  });
  m.impl("_softmax.out",
         [](const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) -> Tensor& {
           return to_structured_out(
               out, softmax_result(lowering::kSoftmax, "softmax", self, dim, half_to_float));
         });
  m.impl("_log_softmax", [](const Tensor& self, int64_t dim, bool half_to_float) {
    return to_new(softmax_result(lowering::kLogSoftmax, "log_softmax", self, dim, half_to_float));
  });
  m.impl("_log_softmax.out",
         [](const Tensor& self, int64_t dim, bool half_to_float, Tensor& out) -> Tensor& {
           return to_structured_out(
               out, softmax_result(lowering::kLogSoftmax, "log_softmax", self, dim, half_to_float));
         });
  m.impl("_softmax_backward_data",
         [](const Tensor& grad, const Tensor& output, int64_t dim, at::ScalarType input_dtype) {
           return to_new(softmax_backward_result(lowering::kSoftmaxBackward, "softmax_backward",
                                                 grad, output, dim, input_dtype));
         });
  m.impl("_softmax_backward_data.out",
         [](const Tensor& grad, const Tensor& output, int64_t dim, at::ScalarType input_dtype,
            Tensor& out) -> Tensor& {
           return to_structured_out(
               out, softmax_backward_result(lowering::kSoftmaxBackward, "softmax_backward", grad,
                                            output, dim, input_dtype));
         });
  m.impl("_log_softmax_backward_data", [](const Tensor& grad, const Tensor& output, int64_t dim,
                                          at::ScalarType input_dtype) {
    return to_new(softmax_backward_result(lowering::kLogSoftmaxBackward, "log_softmax_backward",
                                          grad, output, dim, input_dtype));
  });
  m.impl("_log_softmax_backward_data.out",
         [](const Tensor& grad, const Tensor& output, int64_t dim, at::ScalarType input_dtype,
            Tensor& out) -> Tensor& {
           return to_structured_out(
               out, softmax_backward_result(lowering::kLogSoftmaxBackward, "log_softmax_backward",
                                            grad, output, dim, input_dtype));
         });
}

}  // namespace torch_pjrt::aten

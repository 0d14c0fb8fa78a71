// Delivering op results: new tensor, in place, or out=, each ending the eager op.
#include "aten/op_result.h"

#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>

#include "aten/tensor_bridge.h"

namespace torch_pjrt::aten {
namespace {

at::Tensor& store(at::Tensor& dst, const OpResult& r) {
  TORCH_CHECK(at::canCast(r.dtype, dst.scalar_type()), "result type ", r.dtype,
              " can't be cast to the desired output type ", dst.scalar_type());
  TORCH_CHECK(dst.device() ==
                  at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(r.device)),
              "Expected out tensor to have device tpu:", r.device, ", but got ", dst.device(),
              " instead");
  write(dst, convert(r.value, dst.scalar_type()));
  finish_op();
  return dst;
}

}  // namespace

OpResult elementwise(const graph::OpDef& op, const char* name,
                     std::vector<const at::Tensor*> inputs, at::ScalarType out_dtype,
                     graph::Attrs attrs, std::optional<at::ScalarType> compute) {
  const int device = common_device(name, inputs);
  std::vector<int64_t> sizes = inputs[0]->sizes().vec();
  for (size_t i = 1; i < inputs.size(); ++i) sizes = at::infer_size(sizes, inputs[i]->sizes());
  std::vector<graph::DataPtr> operands;
  for (const at::Tensor* t : inputs)
    operands.push_back(operand(*t, compute.value_or(out_dtype), device));
  if (compute) attrs.ints = {static_cast<int64_t>(element_type(*compute))};
  graph::DataPtr value = graph::record1(op, std::move(operands), std::move(attrs),
                                        tensor_type(out_dtype, sizes), device);
  return {std::move(value), out_dtype, std::move(sizes), device};
}

at::Tensor to_new(const OpResult& r) {
  at::Tensor t = make_tensor(r.value, r.dtype, r.device);
  finish_op();
  return t;
}

at::Tensor& to_self(at::Tensor& self, const OpResult& r) {
  TORCH_CHECK(self.sizes() == at::IntArrayRef(r.sizes), "output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", at::IntArrayRef(r.sizes));
  return store(self, r);
}

at::Tensor& to_out(at::Tensor& out, const OpResult& r) {
  at::native::resize_output(out, r.sizes);
  return store(out, r);
}

at::Tensor& copy_to_out(at::Tensor& out, const at::Tensor& r) {
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

OpResult result_of(const at::Tensor& t) {
  return {read(t), t.scalar_type(), t.sizes().vec(), static_cast<int>(t.device().index())};
}

}  // namespace torch_pjrt::aten

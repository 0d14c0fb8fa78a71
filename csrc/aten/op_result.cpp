// Delivering op results: new tensor, in place, or out=, each ending the eager op.
#include "aten/op_result.h"

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

}  // namespace torch_pjrt::aten

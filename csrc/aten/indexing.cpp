// Indexing kernels. masked_select's output size depends on the mask's values, so it reads the mask
// back to the host (a synchronization) to find the selected positions, then gathers on the device.
#include "lowering/indexing.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <torch/library.h>

#include "aten/op_result.h"
#include "aten/tensor_bridge.h"
#include "device/runtime_state.h"
#include "lowering/creation.h"

namespace torch_pjrt::aten {
namespace {

using at::Tensor;

OpResult masked_select_result(const Tensor& self, const Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  const int device = common_device("masked_select", {&self, &mask});
  const auto sizes = at::infer_size(self.sizes(), mask.sizes());
  const Tensor values = self.expand(sizes);
  const Tensor host_mask = mask.expand(sizes).cpu().reshape(-1);
  const Tensor positions = host_mask.nonzero().reshape(-1).contiguous();
  const std::vector<int64_t> out_sizes{positions.numel()};
  if (positions.numel() == 0) {
    graph::Attrs zero;
    zero.floats = {0.0};
    return {graph::record1(lowering::kFill, {}, zero, tensor_type(self.scalar_type(), out_sizes),
                           device),
            self.scalar_type(), out_sizes, device};
  }
  auto indices = graph::from_buffer(device::client().buffer_from_host(
      positions.data_ptr(), hlo::ElementType::I64, out_sizes, device));
  auto value = graph::record1(lowering::kTake, {read(values), indices}, {},
                              tensor_type(self.scalar_type(), out_sizes), device);
  return {value, self.scalar_type(), out_sizes, device};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("masked_select", [](const Tensor& self, const Tensor& mask) {
    return to_new(masked_select_result(self, mask));
  });
  m.impl("masked_select.out", [](const Tensor& self, const Tensor& mask, Tensor& out) -> Tensor& {
    return to_out(out, masked_select_result(self, mask));
  });
}

}  // namespace torch_pjrt::aten

// _lazy_clone on "tpu": c10's copy-on-write clone over our slots (device::lazy_clone_storage).
// The clone keeps the tensor's sizes, strides and storage offset, as the CPU's does.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "device/allocator.h"

namespace torch_pjrt::aten {
namespace {

at::Tensor lazy_clone(const at::Tensor& self) {
  c10::Storage storage(device::lazy_clone_storage(*self.storage().unsafeGetStorageImpl()));
  return at::empty({0}, self.options())
      .set_(storage, self.storage_offset(), self.sizes(), self.strides());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("_lazy_clone", lazy_clone); }

}  // namespace torch_pjrt::aten

// _lazy_clone on "tpu": PyTorch's copy-on-write clone needs a plain host DataPtr. Here a storage's
// contents are an immutable device value that writes rebind, so a new storage holding the same
// value is already a lazy copy: nothing is copied, and a later write to either rebinds only its
// own. The clone keeps the tensor's sizes, strides and storage offset, as the CPU's does.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "device/allocator.h"

namespace torch_pjrt::aten {
namespace {

at::Tensor lazy_clone(const at::Tensor& self) {
  const c10::Storage& from = self.storage();
  const size_t nbytes = from.nbytes();
  c10::DataPtr data = device::allocator().allocate(nbytes);
  device::allocator().copy_data(data.get(), from.data(), nbytes);
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes, std::move(data),
                       &device::allocator(), /*resizable=*/true);
  return at::empty({0}, self.options())
      .set_(storage, self.storage_offset(), self.sizes(), self.strides());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("_lazy_clone", lazy_clone); }

}  // namespace torch_pjrt::aten

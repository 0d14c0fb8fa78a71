// The minimal PrivateUse1 op set: allocation, strided views, resize_, set_, and the shallow-copy
// compatibility that lets Module.to("tpu") keep Parameter identity.
#include <ATen/EmptyTensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include "aten/tensor_bridge.h"
#include "device/allocator.h"
#include "device/runtime_state.h"

namespace torch_pjrt::aten {
namespace {

constexpr c10::DispatchKeySet kKeys{c10::DispatchKey::PrivateUse1};

// torch.use_deterministic_algorithms(True) with fill_uninitialized_memory (the default): new
// memory holds NaN (integers: their maximum), as the CPU's and CUDA's empty and resize_ give.
bool fill_uninitialized() {
  const auto& context = at::globalContext();
  return context.deterministicAlgorithms() && context.deterministicFillUninitializedMemory();
}

c10::DeviceGuard guard_for(std::optional<at::Device> device) {
  const auto index = device && device->has_index()
                         ? device->index()
                         : static_cast<c10::DeviceIndex>(device::current_device());
  return c10::DeviceGuard(at::Device(c10::DeviceType::PrivateUse1, index));
}

at::Tensor empty_memory_format(at::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout>, std::optional<at::Device> device,
                               std::optional<bool>, std::optional<at::MemoryFormat> memory_format) {
  auto guard = guard_for(device);
  const auto type = dtype.value_or(at::get_default_dtype_as_scalartype());
  stored_type(type);  // rejects unsupported dtypes up front
  at::Tensor result =
      at::detail::empty_generic(size, &device::allocator(), kKeys, type, memory_format);
  if (C10_UNLIKELY(fill_uninitialized())) at::native::fill_empty_deterministic_(result);
  return result;
}

at::Tensor empty_strided(at::IntArrayRef size, at::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                         std::optional<at::Device> device, std::optional<bool>) {
  auto guard = guard_for(device);
  const auto type = dtype.value_or(at::get_default_dtype_as_scalartype());
  stored_type(type);
  at::Tensor result =
      at::detail::empty_strided_generic(size, stride, &device::allocator(), kKeys, type);
  if (C10_UNLIKELY(fill_uninitialized())) at::native::fill_empty_deterministic_(result);
  return result;
}

const at::Tensor& resize_(const at::Tensor& self, at::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  for (int64_t s : size)
    TORCH_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ", size);
  auto* impl = self.unsafeGetTensorImpl();
  // The same sizes keep the strides, as on the CPU: out= views (a column, a transpose) written
  // through _copy_from_and_resize (the CPU fallback, ops without a native out=) stay views.
  if (self.sizes() != size) impl->set_sizes_contiguous(size);
  if (memory_format && *memory_format != at::MemoryFormat::Preserve &&
      *memory_format != at::MemoryFormat::Contiguous) {
    impl->empty_tensor_restride(*memory_format);
  }
  const size_t needed = at::detail::computeStorageNbytes(size, impl->strides(), self.itemsize(),
                                                         self.storage_offset());
  const c10::Storage& storage = impl->unsafe_storage();
  const auto old_nbytes = static_cast<int64_t>(storage.nbytes());
  if (needed > storage.nbytes()) {
    TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
    if (device::resize_storage(storage, needed)) finish_op();
    if (C10_UNLIKELY(fill_uninitialized()))
      at::native::fill_resize_deterministic_(self, old_nbytes);
  }
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, c10::SymInt offset,
                        c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  const int64_t storage_offset = offset.expect_int();
  const auto sizes = C10_AS_INTARRAYREF_SLOW(size);
  const auto strides = C10_AS_INTARRAYREF_SLOW(stride);
  at::native::checkSetStorage(self, source, storage_offset, sizes, strides);
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_offset(storage_offset);
  if (strides.empty()) {
    impl->set_sizes_contiguous(sizes);  // no strides given: contiguous, as on the CPU
  } else {
    impl->set_sizes_and_strides(sizes, strides);
  }
  const size_t needed =
      at::detail::computeStorageNbytes(sizes, impl->strides(), self.itemsize(), storage_offset);
  if (needed > self.storage().nbytes() && device::resize_storage(self.storage(), needed)) {
    finish_op();
  }
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  const int64_t n = static_cast<int64_t>(source.nbytes() / self.itemsize());
  return set_storage(self, std::move(source), 0, c10::SymIntArrayRef({c10::SymInt(n)}), {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) return self;
  return set_storage(self, source.storage(), source.sym_storage_offset(), source.sym_sizes(),
                     source.sym_strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, &device::allocator(), true);
  return set_storage(self, std::move(storage), 0, c10::SymIntArrayRef({c10::SymInt(0)}), {});
}

// CPU and "tpu" tensors may replace each other's data (param.data = param.to("tpu")).
bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  auto dense = [](const at::Tensor& t) {
    return t.layout() == at::kStrided && (t.is_cpu() || t.is_privateuseone());
  };
  return self.key_set() == from.key_set() || (dense(self) && dense(from));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("view", at::native::view);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("resize_", resize_);
  m.impl("set_.source_Storage", set_source_storage);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("set_.source_Tensor", set_source_tensor);
  m.impl("set_", set_empty);
  m.impl("is_set_to", at::native::is_set_to);  // metadata only (the fallback's copies never alias)
  m.impl("_has_compatible_shallow_copy_type", has_compatible_shallow_copy_type);
}

}  // namespace torch_pjrt::aten

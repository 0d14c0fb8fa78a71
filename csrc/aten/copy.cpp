// Copies between the host and "tpu" and between "tpu" tensors, and reading one element (.item()).
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <torch/library.h>

#include "aten/async_copy.h"
#include "aten/device_errors.h"
#include "aten/dtype_rules.h"
#include "aten/tensor_bridge.h"
#include "device/host_allocator.h"
#include "device/runtime_state.h"
#include "graph/checks.h"
#include "runtime/error.h"

namespace torch_pjrt::aten {
namespace {

graph::DataPtr upload(const at::Tensor& host, int device, bool non_blocking = false) {
  // complex32 goes up as complex64 (write() stores its pairs), float8 as its own bytes.
  at::Tensor src = host.scalar_type() == at::kComplexHalf ? host.to(at::kComplexFloat).contiguous()
                                                          : host.contiguous();
  try {
    // From the user's pinned memory itself (no temporary was needed): a transfer under way.
    if (non_blocking && device::is_pinned(src.data_ptr())) return upload_pinned(src, device);
    return graph::from_buffer(device::client().buffer_from_host(
        src.data_ptr(), stored_type(src.scalar_type()), src.sizes().vec(), device));
  } catch (const runtime::PjrtError& e) {
    if (e.code() == PJRT_Error_Code_RESOURCE_EXHAUSTED) {
      raise_out_of_memory(std::string("torch_pjrt: copying to the device: ") + e.what());
    }
    throw;
  }
}

// The values a "tpu" tensor stands for, on the host: its stored elements with its lazy conjugate
// and negative bits (read() and write() apply them on the device).
at::Tensor host_value(const at::Tensor& t) {
  at::Tensor host = to_host(t);
  if (t.is_conj()) host = host.conj();
  if (t.is_neg()) host = at::_neg_view(host);
  return host;
}

at::Tensor resolved(const at::Tensor& t) { return t.resolve_conj().resolve_neg(); }

// _copy_from(self=source, dst): PyTorch routes every copy_ that involves a "tpu" tensor here.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  TORCH_CHECK(self.is_privateuseone() || self.is_cpu(), "copy_: cannot copy from ", self.device(),
              " to ", dst.device());
  TORCH_CHECK(dst.is_privateuseone() || dst.is_cpu(), "copy_: cannot copy from ", self.device(),
              " to ", dst.device());
  if (dst.is_privateuseone()) {  // the checks TensorIterator makes for a copy on the CPU
    at::assert_no_internal_overlap(dst);
    if (self.is_privateuseone()) at::assert_no_partial_overlap(dst, self);
  }
  const std::vector<int64_t> shape = at::infer_size(dst.sizes(), self.sizes());
  TORCH_CHECK(dst.sizes() == at::IntArrayRef(shape), "output with shape ", dst.sizes(),
              " doesn't match the broadcast shape ", at::IntArrayRef(shape));
  // The CPU has no conversion to or from float4 pairs; copies between tensors of it are bytes.
  for (const at::Tensor* t : {&self, &dst}) {
    if (self.scalar_type() != dst.scalar_type()) {
      check_implemented(t->scalar_type() != at::kFloat4_e2m1fn_x2, "copy_", t->scalar_type());
    }
  }
  if (dst.numel() == 0) return dst;
  if (dst.is_cpu()) {
    // Into pinned memory without blocking, as CUDA does; into pageable memory synchronously.
    if (non_blocking && dst.is_contiguous() && device::is_pinned(dst.data_ptr()) &&
        copy_to_pinned(self, dst)) {
      return dst;
    }
    HostReadScope user(true);
    graph::materialize();  // a sync point: pending work runs, as one program in Fused mode
    graph::check_point();  // device checks' failures surface here, as CUDA's asserts do
    if (to_host_into(self, dst)) return dst;
    dst.copy_(host_value(self));  // the CPU handles broadcasting, dtype and dst strides
    return dst;
  }
  const int device = device_index(dst);
  at::Tensor src = self.expand_as(dst);
  graph::DataPtr value;
  if (src.is_cpu()) {
    value = upload(resolved(src).to(dst.scalar_type()), device, non_blocking);
  } else if (device_index(src) != device) {
    HostReadScope user(true);  // the user's transfer between devices
    value = upload(resolved(host_value(src)).to(dst.scalar_type()), device);
  } else {
    // Same dtype: the value as read (float4 pairs have no compute type to convert to).
    value =
        src.scalar_type() == dst.scalar_type() ? read(src) : convert(read(src), dst.scalar_type());
  }
  write(dst, std::move(value));
  finish_op();
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(),
              " elements cannot be converted to Scalar");
  HostReadScope user(true);
  graph::materialize();  // a sync point, like a copy to the host
  graph::check_point();
  return resolved(host_value(self)).item();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", copy_from);
  m.impl("_copy_from_and_resize", copy_from_and_resize);
  m.impl("_local_scalar_dense", local_scalar_dense);
}

// copy_from applies the lazy conjugate and negative bits itself: without these, PyTorch's
// fallbacks for those bits would resolve the source by a clone, i.e. by copy_from again.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

}  // namespace torch_pjrt::aten

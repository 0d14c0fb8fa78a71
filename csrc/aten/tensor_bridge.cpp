// Tensor <-> graph value bridge: reads and writes through strided views of flat storages.
#include "aten/tensor_bridge.h"

#include <ATen/ATen.h>

#include "aten/eager_mode.h"
#include "device/allocator.h"
#include "lowering/creation.h"
#include "lowering/views.h"
#include "runtime/metrics.h"

namespace torch_pjrt::aten {
namespace {

using hlo::ElementType;

// The storage's contents as a value of `type`'s element type; an uninitialized storage reads as
// zeros (PyTorch leaves it undefined).
graph::DataPtr storage_value(const graph::SlotPtr& slot, ElementType type) {
  const int64_t itemsize = static_cast<int64_t>(runtime::element_size(type));
  if (!slot->data) {
    graph::Attrs zero;
    zero.floats = {0.0};
    graph::bind_slot(
        slot, graph::record1(lowering::kFill, {}, zero,
                             hlo::TensorType{type, {slot->nbytes / itemsize}}, slot->device));
  }
  const graph::DataPtr& data = slot->data;
  TORCH_CHECK(data->type.dtype == type, "tpu: viewing a storage of ",
              runtime::element_name(data->type.dtype), " as ", runtime::element_name(type),
              " is not supported yet");
  return data;
}

bool covers_storage(const at::Tensor& t, const graph::Slot& slot) {
  return t.storage_offset() == 0 && t.is_contiguous() &&
         static_cast<int64_t>(t.numel() * t.element_size()) == slot.nbytes;
}

}  // namespace

hlo::ElementType element_type(at::ScalarType t) {
  switch (t) {
    case at::kBool:
      return ElementType::Bool;
    case at::kChar:
      return ElementType::I8;
    case at::kShort:
      return ElementType::I16;
    case at::kInt:
      return ElementType::I32;
    case at::kLong:
      return ElementType::I64;
    case at::kByte:
      return ElementType::U8;
    case at::kHalf:
      return ElementType::F16;
    case at::kBFloat16:
      return ElementType::BF16;
    case at::kFloat:
      return ElementType::F32;
    case at::kDouble:
      return ElementType::F64;
    default:
      TORCH_CHECK_TYPE(false, "tpu: dtype ", t, " is not supported");
  }
}

hlo::TensorType tensor_type(at::ScalarType t, at::IntArrayRef sizes) {
  return hlo::TensorType{element_type(t), sizes.vec()};
}

int device_index(const at::Tensor& t) { return t.device().index(); }

int common_device(const char* op, c10::ArrayRef<const at::Tensor*> tensors) {
  std::optional<at::Device> found;
  for (const at::Tensor* t : tensors) {
    if (!t->defined()) continue;
    if (t->is_cpu() && t->dim() == 0) continue;  // scalars may come from the host
    if (!found) {
      found = t->device();
    } else {
      TORCH_CHECK(*found == t->device(),
                  "Expected all tensors to be on the same device, but found at least two devices, ",
                  *found, " and ", t->device(), "! (when checking argument for ", op, ")");
    }
  }
  TORCH_CHECK(found && found->is_privateuseone(), op, ": expected a tpu tensor");
  return found->index();
}

graph::DataPtr read(const at::Tensor& t) {
  const graph::SlotPtr& slot = device::slot_of(t.storage().data_ptr());
  const ElementType type = element_type(t.scalar_type());
  if (t.numel() == 0) {
    graph::Attrs zero;
    zero.floats = {0.0};
    return graph::record1(lowering::kFill, {}, zero, tensor_type(t.scalar_type(), t.sizes()),
                          slot->device);
  }
  graph::DataPtr storage = storage_value(slot, type);
  if (covers_storage(t, *slot) && storage->type.dims == t.sizes().vec()) return storage;
  return graph::record1(
      lowering::kViewRead, {storage},
      lowering::view_attrs(t.sizes().vec(), t.strides().vec(), t.storage_offset()),
      tensor_type(t.scalar_type(), t.sizes()), slot->device);
}

graph::DataPtr scalar(const at::Scalar& s, at::ScalarType t, int device) {
  if (s.isIntegral(/*includeBool=*/true) && at::isIntegralType(t, /*includeBool=*/true)) {
    return graph::host_scalar(s.toLong(), element_type(t), device);  // exact beyond 2^53
  }
  return graph::host_scalar(s.toDouble(), element_type(t), device);
}

graph::DataPtr operand(const at::Tensor& t, at::ScalarType scalar_type, int device) {
  if (t.is_cpu()) {
    TORCH_INTERNAL_ASSERT(t.dim() == 0);
    return scalar(t.item(), scalar_type, device);
  }
  return read(t);
}

graph::DataPtr convert(graph::DataPtr value, at::ScalarType dtype) {
  const hlo::ElementType type = element_type(dtype);
  if (value->type.dtype == type) return value;
  return graph::record1(lowering::kConvert, {value}, {}, hlo::TensorType{type, value->type.dims},
                        value->device);
}

void write(const at::Tensor& dst, graph::DataPtr value) {
  if (dst.numel() == 0) return;
  const graph::SlotPtr& slot = device::slot_of(dst.storage().data_ptr());
  if (covers_storage(dst, *slot)) {
    graph::bind_slot(slot, std::move(value));
    return;
  }
  graph::DataPtr storage = storage_value(slot, element_type(dst.scalar_type()));
  graph::bind_slot(slot, graph::record1(lowering::kViewWrite, {storage, std::move(value)},
                                        lowering::view_attrs(dst.sizes().vec(), dst.strides().vec(),
                                                             dst.storage_offset()),
                                        storage->type, slot->device));
}

at::Tensor make_tensor(graph::DataPtr value, at::ScalarType dtype, int device) {
  c10::DeviceGuard guard(
      at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
  at::Tensor out = at::empty(value->type.dims, at::TensorOptions().dtype(dtype).device(
                                                   c10::DeviceType::PrivateUse1, device));
  write(out, std::move(value));
  return out;
}

namespace {
thread_local int deferred_ops = 0;
}

void finish_op() {
  if (deferred_ops != 0) return;
  switch (eager_mode()) {
    case EagerMode::Strict:
      graph::materialize();
      break;
    case EagerMode::Fused:
      graph::op_boundary();
      break;
    case EagerMode::Debug:
      graph::synchronize();  // compile and run errors surface at this op
      break;
  }
}

OneOp::OneOp() { ++deferred_ops; }

OneOp::~OneOp() {
  if (!finished_) --deferred_ops;
}

void OneOp::finish() {
  finished_ = true;
  --deferred_ops;
  finish_op();
}

at::Tensor to_host(const at::Tensor& t) {
  const graph::SlotPtr& slot = device::slot_of(t.storage().data_ptr());
  const graph::DataPtr& data = slot->data;
  // A view of a materialized storage that is not much larger than it: copy the storage and take
  // the view on the host, instead of running a program that extracts it.
  if (t.numel() > 0 && data && !data->pending() && !data->error &&
      data->type.dtype == element_type(t.scalar_type()) &&
      slot->nbytes <= 4 * static_cast<int64_t>(t.numel() * t.element_size())) {
    at::Tensor storage = to_cpu(data, t.scalar_type()).reshape(-1);
    return storage.as_strided(t.sizes(), t.strides(), t.storage_offset());
  }
  return to_cpu(read(t), t.scalar_type());
}

namespace {
thread_local int host_reads = 0;  // 0: none in progress, 1: the user's, 2: an op's
}

HostReadScope::HostReadScope(bool user) : previous_(host_reads) {
  if (host_reads == 0) host_reads = user ? 1 : 2;
}

HostReadScope::~HostReadScope() { host_reads = previous_; }

at::Tensor to_cpu(graph::DataPtr value, at::ScalarType dtype) {
  at::Tensor out = at::empty(value->type.dims, at::TensorOptions().dtype(dtype));
  if (out.numel() == 0) return out;
  auto buffer = graph::host_buffer(value);
  if (host_reads != 1) runtime::counters().host_round_trips++;
  buffer->to_host(out.data_ptr(), out.nbytes());
  return out;
}

}  // namespace torch_pjrt::aten

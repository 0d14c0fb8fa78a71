// Tensor <-> graph value bridge: reads and writes through strided views of flat storages, of any
// dtype over a storage of any element type (its bytes are reinterpreted).
#include "aten/tensor_bridge.h"

#include <ATen/ATen.h>

#include <cstring>
#include <vector>

#include "aten/dtype_rules.h"
#include "aten/eager_mode.h"
#include "device/allocator.h"
#include "device/runtime_state.h"
#include "graph/checks.h"
#include "graph/trace_mode.h"
#include "lowering/complex.h"
#include "lowering/creation.h"
#include "lowering/elementwise.h"
#include "lowering/views.h"
#include "runtime/metrics.h"

namespace torch_pjrt::aten {
using hlo::ElementType;

ElementType stored_type(at::ScalarType t) {
  return at::isFloat8Type(t) || t == at::kFloat4_e2m1fn_x2 ? ElementType::U8 : element_type(t);
}

namespace {

// `t` as a view of the whole storage its bytes lie in, for a tensor over a slice of another storage
// (UntypedStorage slicing makes a storage whose data pointer is inside another's): the view shares
// that storage's slot, so reads and writes through either are seen by both.
at::Tensor over_whole_storage(const at::Tensor& t) {
  const device::StorageAt whole = device::storage_at(t.storage().data_ptr().get());
  const auto itemsize = static_cast<int64_t>(t.element_size());
  TORCH_CHECK_NOT_IMPLEMENTED(whole.offset % itemsize == 0, "tpu: a ", t.scalar_type(),
                              " tensor over a storage slice that starts ", whole.offset,
                              " bytes into its storage, not a multiple of the element size ",
                              itemsize, ", is not supported");
  c10::Storage storage(c10::Storage::use_byte_size_t(), whole.slot->nbytes,
                       c10::DataPtr(whole.address, t.device()), nullptr, false);
  at::Tensor alias =
      at::detail::make_tensor<c10::TensorImpl>(std::move(storage), t.key_set(), t.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(),
                                                     t.storage_offset() + whole.offset / itemsize);
  return alias;
}

bool over_storage_slice(const at::Tensor& t) {
  return !device::starts_storage(t.storage().data_ptr());
}

// The format of a float8 dtype, which its bytes are bitcast to and from for conversions.
ElementType float8_format(at::ScalarType t) {
  switch (t) {
    case at::kFloat8_e5m2:
      return ElementType::F8E5M2;
    case at::kFloat8_e4m3fn:
      return ElementType::F8E4M3FN;
    case at::kFloat8_e5m2fnuz:
      return ElementType::F8E5M2FNUZ;
    case at::kFloat8_e4m3fnuz:
      return ElementType::F8E4M3FNUZ;
    default:
      TORCH_CHECK_TYPE(false, "tpu: dtype ", t, " is not supported");
  }
}

// The storage's contents as an array of `type`: as it is when it holds `type`, else its bytes
// reinterpreted as a flat array (the caller checks that its byte size divides into `type`); an
// uninitialized storage reads as zeros (PyTorch leaves it undefined).
graph::DataPtr storage_value(const graph::SlotPtr& slot, ElementType type) {
  // Built only when a node is recorded: reading a storage as it is (every operand of most ops)
  // allocates nothing.
  const auto flat = [&] {
    const int64_t itemsize = static_cast<int64_t>(runtime::element_size(type));
    return hlo::TensorType{type, {slot->nbytes / itemsize}};
  };
  if (!slot->data) {
    graph::Attrs zero;
    zero.floats = {0.0};
    graph::bind_slot(slot, graph::record1(lowering::kFill, {}, zero, flat(), slot->device));
  }
  const graph::DataPtr& data = slot->data;
  if (data->type.dtype == type) return data;
  return graph::record1(lowering::kBitcast, {data}, {}, flat(), slot->device);
}

// How a tensor reads and writes a storage that holds another element type: as integers of the
// tensor's element width (moving data as a float type may quiet NaN payloads), or as bytes, one
// last dimension of itemsize per element, when the storage's size is no multiple of that width.
// A kBitcast turns the value to and from the tensor's dtype.
struct BitsView {
  ElementType type;
  std::vector<int64_t> sizes, strides;
  int64_t offset;
  hlo::TensorType value;
};

BitsView bits_view(const at::Tensor& t, const graph::Slot& slot) {
  const int64_t k = static_cast<int64_t>(t.element_size());
  std::vector<int64_t> sizes = t.sizes().vec(), strides = t.strides().vec();
  int64_t offset = t.storage_offset();
  // Bytes per integer moved: the element width, or 8 for complex128 (no 16-byte integers).
  const int64_t word = slot.nbytes % k != 0 ? 1 : std::min<int64_t>(k, 8);
  const ElementType type = word == 1   ? ElementType::U8
                           : word == 2 ? ElementType::I16
                           : word == 4 ? ElementType::I32
                                       : ElementType::I64;
  if (word != k) {
    const int64_t split = k / word;
    for (int64_t& s : strides) s *= split;
    sizes.push_back(split);
    strides.push_back(1);
    offset *= split;
  }
  return {type, sizes, strides, offset, {type, sizes}};
}

// Records `op` (kViewRead or kViewWrite) on `operands` for the view (sizes, strides, offset). A
// nonzero offset goes to the program at run time, so views that differ only in where they start
// (x[i] in a loop) share one program; a compiled graph's views are fixed, so tracing keeps it an
// attribute, which leaves XLA static slices.
graph::DataPtr record_view(const graph::OpDef& op, std::vector<graph::DataPtr> operands,
                           const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                           int64_t offset, hlo::TensorType out, int device) {
  if (offset != 0 && !graph::trace_active()) {
    operands.push_back(graph::host_scalar(offset, ElementType::I64, device));
    offset = 0;
  }
  return graph::record1(op, std::move(operands), lowering::view_attrs(sizes, strides, offset),
                        std::move(out), device);
}

// A complex32 view (sizes, strides, offset) as the float16 view of its (re, im) pairs: one more
// dimension of 2, at twice the strides and offset.
struct HalfPairsView {
  std::vector<int64_t> sizes, strides;
  int64_t offset;
};

HalfPairsView half_pairs_view(const at::Tensor& t) {
  HalfPairsView v{t.sizes().vec(), t.strides().vec(), 2 * t.storage_offset()};
  for (int64_t& s : v.strides) s *= 2;
  v.sizes.push_back(2);
  v.strides.push_back(1);
  return v;
}

bool covers_storage(const at::Tensor& t, const graph::Slot& slot) {
  return t.storage_offset() == 0 && t.is_contiguous() &&
         static_cast<int64_t>(t.numel() * t.element_size()) == slot.nbytes;
}

// A materialized storage of raw bytes (written by a storage copy: torch.load, UntypedStorage.copy_)
// takes the dtype of the first tensor that reads it, and its shape when it covers the storage, by
// a program of its own. Later programs then read it as an unsaved tensor would: XLA may round
// differently in a program that reads its input through a bitcast (in Fused mode, the parameters
// after AdamW's first step from a loaded state differed from an uninterrupted run's by an ulp or
// two), and a compiled graph's replay needs the traced type. Not while tracing, where running a
// program would end the trace.
void adopt_type(const graph::SlotPtr& slot, const at::Tensor& t) {
  const graph::DataPtr& data = slot->data;
  const ElementType type = stored_type(t.scalar_type());
  const int64_t itemsize = static_cast<int64_t>(runtime::element_size(type));
  if (!data || data->type.dtype != ElementType::U8 || data->pending() || data->error ||
      type == ElementType::Bool || t.scalar_type() == at::kComplexHalf ||
      slot->nbytes % itemsize != 0 || graph::trace_active()) {
    return;
  }
  const std::vector<int64_t> dims =
      covers_storage(t, *slot) ? t.sizes().vec() : std::vector<int64_t>{slot->nbytes / itemsize};
  graph::DataPtr value =
      graph::record1(lowering::kBitcast, {data}, {}, hlo::TensorType{type, dims}, slot->device);
  graph::compute({value});
  graph::bind_slot(slot, std::move(value));
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
    case at::kUInt16:
      return ElementType::U16;
    case at::kUInt32:
      return ElementType::U32;
    case at::kUInt64:
      return ElementType::U64;
    case at::kComplexFloat:
      return ElementType::C64;
    case at::kComplexDouble:
      return ElementType::C128;
    case at::kComplexHalf:  // computed in complex64, stored as float16 pairs (see read/write)
      return ElementType::C64;
    case at::kFloat8_e5m2:  // computed in float32, stored as bytes (see stored_type)
    case at::kFloat8_e4m3fn:
    case at::kFloat8_e5m2fnuz:
    case at::kFloat8_e4m3fnuz:
      return ElementType::F32;
    case at::kFloat4_e2m1fn_x2:  // stored as its bytes; the CPU computes nothing on it either
      check_implemented(false, "tpu", t);
    default:
      TORCH_CHECK_TYPE(false, "tpu: dtype ", t, " is not supported");
  }
}

at::ScalarType scalar_type(hlo::ElementType t) {
  switch (t) {
    case ElementType::Bool:
      return at::kBool;
    case ElementType::I8:
      return at::kChar;
    case ElementType::I16:
      return at::kShort;
    case ElementType::I32:
      return at::kInt;
    case ElementType::I64:
      return at::kLong;
    case ElementType::U8:
      return at::kByte;
    case ElementType::F16:
      return at::kHalf;
    case ElementType::BF16:
      return at::kBFloat16;
    case ElementType::F32:
      return at::kFloat;
    case ElementType::F64:
      return at::kDouble;
    case ElementType::U16:
      return at::kUInt16;
    case ElementType::U32:
      return at::kUInt32;
    case ElementType::U64:
      return at::kUInt64;
    case ElementType::C64:
      return at::kComplexFloat;
    case ElementType::C128:
      return at::kComplexDouble;
    case ElementType::F8E5M2:
      return at::kFloat8_e5m2;
    case ElementType::F8E4M3FN:
      return at::kFloat8_e4m3fn;
    case ElementType::F8E5M2FNUZ:
      return at::kFloat8_e5m2fnuz;
    case ElementType::F8E4M3FNUZ:
      return at::kFloat8_e4m3fnuz;
  }
  TORCH_INTERNAL_ASSERT(false, "unknown element type");
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

namespace {

// `value` with PyTorch's lazy conjugate and negative bits of `t` applied: the elements t stands for
// from those its storage holds, and back (both are their own inverse).
graph::DataPtr apply_math_bits(graph::DataPtr value, const at::Tensor& t) {
  if (t.is_conj()) {
    value = graph::record1(lowering::kConj, {value}, {}, value->type, value->device);
  }
  if (t.is_neg()) value = graph::record1(lowering::kNeg, {value}, {}, value->type, value->device);
  return value;
}

// The elements t's storage holds for t, in t's stored type, without t's lazy conjugate and
// negative bits.
graph::DataPtr stored_elements(const at::Tensor& t) {
  const graph::SlotPtr& slot = device::slot_of(t.storage().data_ptr());
  const ElementType type = stored_type(t.scalar_type());
  const auto result = [&] { return hlo::TensorType{type, t.sizes().vec()}; };  // a new node's
  if (t.numel() == 0) {
    graph::Attrs zero;
    zero.floats = {0.0};
    return graph::record1(lowering::kFill, {}, zero, result(), slot->device);
  }
  if (t.scalar_type() == at::kComplexHalf) {
    const HalfPairsView v = half_pairs_view(t);
    const hlo::TensorType pairs_type{ElementType::F16, v.sizes};
    graph::DataPtr pairs = storage_value(slot, ElementType::F16);
    if (!covers_storage(t, *slot) || pairs->type.dims != v.sizes) {
      pairs = record_view(lowering::kViewRead, {pairs}, v.sizes, v.strides, v.offset, pairs_type,
                          slot->device);
    }
    return graph::record1(lowering::kComplexFromHalfPairs, {pairs}, {}, result(), slot->device);
  }
  if (slot->data && slot->data->type.dtype != type) adopt_type(slot, t);
  if (slot->data && slot->data->type.dtype != type) {
    const BitsView v = bits_view(t, *slot);
    graph::DataPtr bits = record_view(lowering::kViewRead, {storage_value(slot, v.type)}, v.sizes,
                                      v.strides, v.offset, v.value, slot->device);
    return graph::record1(lowering::kBitcast, {bits}, {}, result(), slot->device);
  }
  graph::DataPtr storage = storage_value(slot, type);
  if (covers_storage(t, *slot) && t.sizes().equals(storage->type.dims)) return storage;
  return record_view(lowering::kViewRead, {storage}, t.sizes().vec(), t.strides().vec(),
                     t.storage_offset(), result(), slot->device);
}

// t's elements in the type kernels compute it in: float8 bytes widened to float32.
graph::DataPtr stored_value(const at::Tensor& t) {
  graph::DataPtr value = stored_elements(t);
  if (!at::isFloat8Type(t.scalar_type())) return value;
  const std::vector<int64_t>& dims = value->type.dims;
  value = graph::record1(lowering::kBitcast, {std::move(value)}, {},
                         {float8_format(t.scalar_type()), dims}, value->device);
  return graph::record1(lowering::kConvert, {value}, {}, {ElementType::F32, dims}, value->device);
}

}  // namespace

graph::DataPtr read(const at::Tensor& t) {
  if (over_storage_slice(t)) return read(over_whole_storage(t));
  // Only kernels PyTorch's fallbacks let through (copies, mm, bmm, ...) see tensors with the bits.
  if (t.is_conj() || t.is_neg()) return apply_math_bits(stored_value(t), t);
  return stored_value(t);
}

void adopt_dtype(const at::Tensor& t) {
  if (over_storage_slice(t)) return adopt_dtype(over_whole_storage(t));
  adopt_type(device::slot_of(t.storage().data_ptr()), t);
}

namespace {

struct SharedScalar {
  int tag;  // 0 integral, 1 floating, 2 complex, 3 bool: which of the Scalar's values the bits are
  uint64_t bits[2];
  at::ScalarType dtype;
  int device;
  graph::DataPtr value;
};
// The scalars of the outermost SharedScalars alive on this thread.
thread_local bool sharing_scalars = false;
thread_local std::vector<SharedScalar> shared_scalars;

SharedScalar shared_key(const at::Scalar& s, at::ScalarType t, int device) {
  SharedScalar k{0, {0, 0}, t, device, nullptr};
  auto put = [&k](int i, double v) { std::memcpy(&k.bits[i], &v, sizeof v); };
  if (s.isBoolean()) {
    k.tag = 3;
    k.bits[0] = s.to<bool>();
  } else if (s.isIntegral(/*includeBool=*/false)) {  // a uint64 past INT64_MAX has no int64
    k.bits[0] = s.isUnsigned() ? s.toUInt64() : static_cast<uint64_t>(s.toLong());
  } else if (s.isComplex()) {
    k.tag = 2;
    const c10::complex<double> z = s.toComplexDouble();
    put(0, z.real());
    put(1, z.imag());
  } else {
    k.tag = 1;
    put(0, s.toDouble());
  }
  return k;
}

graph::DataPtr new_scalar(const at::Scalar& s, at::ScalarType t, int device) {
  if (t == at::kBool) return graph::host_scalar(int64_t{s.to<bool>()}, ElementType::Bool, device);
  if (at::isIntegralType(t, /*includeBool=*/false) && !s.isComplex()) {
    // exact beyond 2^53; a fractional value truncates, as a C++ cast (fill_, full). A uint64
    // value past INT64_MAX travels as its bits: the program's s64 -> u64 convert keeps them.
    const bool unsigned64 = t == at::kUInt64 && s.isIntegral(false) && s.isUnsigned();
    const int64_t v = unsigned64 ? static_cast<int64_t>(s.toUInt64()) : s.toLong();
    return graph::host_scalar(v, element_type(t), device);
  }
  if (s.isComplex() || t == at::kComplexHalf) {
    c10::complex<double> z = s.toComplexDouble();
    if (t == at::kComplexHalf) {  // the CPU rounds a complex32 op's scalar to complex32 (unchecked)
      z = {static_cast<float>(c10::Half(static_cast<float>(z.real()))),
           static_cast<float>(c10::Half(static_cast<float>(z.imag())))};
    }
    if (!at::isComplexType(t)) return graph::host_scalar(z.real(), element_type(t), device);
    const hlo::ElementType part = runtime::real_part_type(element_type(t));
    return graph::record1(
        lowering::kComplex,
        {graph::host_scalar(z.real(), part, device), graph::host_scalar(z.imag(), part, device)},
        {}, hlo::TensorType{element_type(t), {}}, device);
  }
  return graph::host_scalar(s.toDouble(), element_type(t), device);
}

}  // namespace

graph::DataPtr scalar(const at::Scalar& s, at::ScalarType t, int device) {
  if (!sharing_scalars) return new_scalar(s, t, device);
  SharedScalar key = shared_key(s, t, device);
  for (const SharedScalar& e : shared_scalars) {
    if (e.tag == key.tag && e.bits[0] == key.bits[0] && e.bits[1] == key.bits[1] && e.dtype == t &&
        e.device == device)
      return e.value;
  }
  key.value = new_scalar(s, t, device);
  shared_scalars.push_back(key);
  return key.value;
}

SharedScalars::SharedScalars() : outermost_(!sharing_scalars) { sharing_scalars = true; }

SharedScalars::~SharedScalars() {
  if (!outermost_) return;
  shared_scalars.clear();
  sharing_scalars = false;
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
  if (over_storage_slice(dst)) return write(over_whole_storage(dst), std::move(value));
  if (dst.is_conj() || dst.is_neg()) value = apply_math_bits(std::move(value), dst);
  const graph::SlotPtr& slot = device::writable_slot(dst.storage());
  if (dst.scalar_type() == at::kComplexHalf) {
    const HalfPairsView v = half_pairs_view(dst);
    graph::DataPtr pairs = graph::record1(lowering::kComplexToHalfPairs, {std::move(value)}, {},
                                          {ElementType::F16, v.sizes}, slot->device);
    if (covers_storage(dst, *slot)) {
      graph::bind_slot(slot, std::move(pairs));
      return;
    }
    graph::DataPtr storage = storage_value(slot, ElementType::F16);
    graph::bind_slot(slot, record_view(lowering::kViewWrite, {storage, std::move(pairs)}, v.sizes,
                                       v.strides, v.offset, storage->type, slot->device));
    return;
  }
  const ElementType type = stored_type(dst.scalar_type());
  if (at::isFloat8Type(dst.scalar_type()) && value->type.dtype != type) {  // rounded to bytes
    const std::vector<int64_t> dims = value->type.dims;
    value = graph::record1(lowering::kConvert, {std::move(value)}, {},
                           {float8_format(dst.scalar_type()), dims}, slot->device);
    value = graph::record1(lowering::kBitcast, {std::move(value)}, {}, {type, dims}, slot->device);
  }
  if (covers_storage(dst, *slot)) {
    graph::bind_slot(slot, std::move(value));
    return;
  }
  if (slot->data && slot->data->type.dtype != type) {
    const BitsView v = bits_view(dst, *slot);
    graph::DataPtr storage = storage_value(slot, v.type);
    graph::DataPtr bits =
        graph::record1(lowering::kBitcast, {std::move(value)}, {}, v.value, slot->device);
    graph::bind_slot(slot, record_view(lowering::kViewWrite, {storage, std::move(bits)}, v.sizes,
                                       v.strides, v.offset, storage->type, slot->device));
    return;
  }
  graph::DataPtr storage = storage_value(slot, type);
  graph::bind_slot(
      slot, record_view(lowering::kViewWrite, {storage, std::move(value)}, dst.sizes().vec(),
                        dst.strides().vec(), dst.storage_offset(), storage->type, slot->device));
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
// Where the checks of this thread's current op start in the registration order.
thread_local uint64_t op_checks_start = graph::check_marker();
}  // namespace

void finish_op() {
  device::check_not_forked();
  if (deferred_ops != 0) return;
  op_checks_start = graph::check_marker();
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

void discard_op_checks() { graph::take_checks_since(op_checks_start); }

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
  device::check_not_forked();
  if (over_storage_slice(t)) return to_host(over_whole_storage(t));
  const graph::SlotPtr& slot = device::slot_of(t.storage().data_ptr());
  const graph::DataPtr& data = slot->data;
  // A view of a materialized storage that is not much larger than it: copy the storage and take
  // the view of its bytes on the host, instead of running a program that extracts it.
  const int64_t itemsize = static_cast<int64_t>(t.element_size());
  if (t.numel() > 0 && data && !data->pending() && !data->error &&
      slot->nbytes <= 4 * t.numel() * itemsize) {
    at::Tensor bytes = to_cpu(data, scalar_type(data->type.dtype)).reshape(-1).view(at::kByte);
    return bytes.narrow(0, 0, slot->nbytes / itemsize * itemsize)
        .view(t.scalar_type())
        .as_strided(t.sizes(), t.strides(), t.storage_offset());
  }
  // float8 elements as stored: through float32 a NaN's payload could change.
  return to_cpu(at::isFloat8Type(t.scalar_type()) ? stored_elements(t) : read(t), t.scalar_type());
}

namespace {
thread_local int host_reads = 0;  // 0: none in progress, 1: the user's, 2: an op's
}

HostReadScope::HostReadScope(bool user) : previous_(host_reads) {
  if (host_reads == 0) host_reads = user ? 1 : 2;
}

HostReadScope::~HostReadScope() { host_reads = previous_; }

namespace {
// The dtype of element_type(t) (complex64 for complex32, float32 for float8): what host copies of
// their computed values convert through.
at::ScalarType compute_dtype(at::ScalarType t) { return scalar_type(element_type(t)); }
}  // namespace

at::Tensor to_cpu(graph::DataPtr value, at::ScalarType dtype) {
  // complex32 and float8 values are complex64 and float32 on the device (the stored ones are their
  // formats' values: writes round); float8 bytes come as they are.
  if (dtype == at::kComplexHalf || value->type.dtype != stored_type(dtype)) {
    return to_cpu(std::move(value), compute_dtype(dtype)).to(dtype);
  }
  at::Tensor out = at::empty(value->type.dims, at::TensorOptions().dtype(dtype));
  if (out.numel() == 0) return out;
  auto buffer = graph::host_buffer(value);
  if (host_reads != 1) runtime::counters().host_round_trips++;
  buffer->to_host(out.data_ptr(), out.nbytes());
  return out;
}

bool to_host_into(const at::Tensor& src, const at::Tensor& dst) {
  if (src.scalar_type() != dst.scalar_type() || src.is_conj() || src.is_neg() ||
      !dst.is_contiguous() || !src.is_contiguous() || src.storage_offset() != 0 ||
      src.sizes() != dst.sizes() || src.numel() == 0 || over_storage_slice(src)) {
    return false;
  }
  device::check_not_forked();
  const graph::SlotPtr& slot = device::slot_of(src.storage().data_ptr());
  const graph::DataPtr& data = slot->data;
  const at::ScalarType dtype = src.scalar_type();
  if (!data || data->pending() || data->error || data->type.dtype != stored_type(dtype) ||
      dtype == at::kComplexHalf || static_cast<int64_t>(dst.nbytes()) != slot->nbytes) {
    return false;
  }
  auto buffer = graph::host_buffer(data);
  if (host_reads != 1) runtime::counters().host_round_trips++;
  buffer->to_host(dst.data_ptr(), dst.nbytes());
  return true;
}

}  // namespace torch_pjrt::aten

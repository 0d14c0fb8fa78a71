// The bridge between at::Tensor on "tpu" and the deferred graph: the value a tensor (or view)
// holds, writing a value through a tensor into its storage, new output tensors, and op boundaries.
#pragma once

#include <ATen/core/Tensor.h>

#include "graph/graph.h"

namespace torch_pjrt::aten {

// The element type kernels compute `t` in; throws TypeError for unsupported dtypes. complex32 and
// the float8 dtypes compute in complex64 and float32 and are only stored in their own formats
// (read() widens, write() rounds).
hlo::ElementType element_type(at::ScalarType t);
// The element type a storage holds t's elements in: element_type(t), except for float8, whose
// bytes are kept as U8 (XLA may move float8 values through a wider type, which changes NaN bits).
// complex32 is stored as float16 pairs by read() and write() apart.
hlo::ElementType stored_type(at::ScalarType t);
at::ScalarType scalar_type(hlo::ElementType t);
hlo::TensorType tensor_type(at::ScalarType t, at::IntArrayRef sizes);

// The value of `t` (a "tpu" tensor, any strides), dims = t.sizes(), element type of t. The storage
// may hold another element type (t is a dtype view): its bytes are read as t's dtype, bit-exactly.
graph::DataPtr read(const at::Tensor& t);
// When t's storage holds raw bytes (written by a storage copy, as torch.load does), converts them
// to t's dtype now, as read() does on first use; compiled graphs do it before tracing, so that
// their programs take the converted value instead of converting it on every call.
void adopt_dtype(const at::Tensor& t);
// A rank-0 value for Python scalars and wrapped numbers, passed to programs at run time.
graph::DataPtr scalar(const at::Scalar& s, at::ScalarType t, int device);
// While alive (outermost on this thread), scalar() gives equal scalars of one dtype and device the
// same value: a _foreach_* op's per-tensor steps all take its one Scalar (or equal entries of its
// list, as an optimizer's bias corrections are), and then pass one program argument instead of
// one per tensor. Equal means the same bits: 0.0 and -0.0, or NaNs of other payloads, stay apart.
class SharedScalars {
 public:
  SharedScalars();
  SharedScalars(const SharedScalars&) = delete;
  SharedScalars& operator=(const SharedScalars&) = delete;
  ~SharedScalars();

 private:
  bool outermost_;
};
// An op's tensor operand: the value of a "tpu" tensor, or a CPU 0-dim tensor (a wrapped scalar) as
// a scalar of `scalar_type`. Lowerings convert operands to their compute type themselves.
graph::DataPtr operand(const at::Tensor& t, at::ScalarType scalar_type, int device);
// `value` converted to `dtype` (no node when it already has that type).
graph::DataPtr convert(graph::DataPtr value, at::ScalarType dtype);
// Stores `value` (dims = dst.sizes(), element type of dst) into the elements `dst` views, as
// integers of its width (bit-exact) when the storage holds another element type.
void write(const at::Tensor& dst, graph::DataPtr value);
// A new contiguous "tpu" tensor holding `value`.
at::Tensor make_tensor(graph::DataPtr value, at::ScalarType dtype, int device);

// Device index of a "tpu" tensor.
int device_index(const at::Tensor& t);
// The common device of an op's "tpu" tensors (CPU 0-dim tensors are allowed as scalars); raises
// PyTorch's "Expected all tensors to be on the same device" error otherwise.
int common_device(const char* op, c10::ArrayRef<const at::Tensor*> tensors);

// End of one eager op: launches what the op recorded (Strict), lets the fusion policy decide
// (Fused) or runs it to completion (Debug); deferred while a OneOp is alive.
void finish_op();
// Drops the device-side checks recorded by the op running on this thread (those registered since
// its last finish_op()): for an op that raises after recording, whose result is never used.
void discard_op_checks();

// While alive, finish_op() defers, so ops run inside (e.g. the per-tensor steps of a _foreach_*
// list op) become one program, launched by finish() of the outermost OneOp.
class OneOp {
 public:
  OneOp();
  OneOp(const OneOp&) = delete;
  OneOp& operator=(const OneOp&) = delete;
  ~OneOp();  // leaves recorded work for the next materialization when finish() was not reached
  void finish();

 private:
  bool finished_ = false;
};

// The contents of a "tpu" tensor as a CPU tensor (any strides); computes only what it needs.
at::Tensor to_host(const at::Tensor& t);
// Copies a "tpu" value to the host as a contiguous CPU tensor, first raising the error of a failed
// device check it depends on. Counts a host round trip unless a user read is in progress.
at::Tensor to_cpu(graph::DataPtr value, at::ScalarType dtype);
// Copies `src` ("tpu") straight into `dst` (CPU) when it is one whole computed buffer of dst's
// dtype and dst is contiguous: one device-to-host copy, no host temporary. False when another
// path is needed (nothing is copied then).
bool to_host_into(const at::Tensor& src, const at::Tensor& dst);

// While alive, copies to the host on this thread are the user's (.cpu(), .item(), printing) when
// `user`, else an op's (the CPU fallback's operands); the outermost scope decides.
class HostReadScope {
 public:
  explicit HostReadScope(bool user);
  HostReadScope(const HostReadScope&) = delete;
  HostReadScope& operator=(const HostReadScope&) = delete;
  ~HostReadScope();

 private:
  int previous_;
};

}  // namespace torch_pjrt::aten

// Recording elementwise ops, and how an op's computed value reaches its caller: as a new tensor,
// in place, or into out=.
#pragma once

#include <ATen/core/Tensor.h>

#include "graph/node.h"

namespace torch_pjrt::aten {

struct OpResult {
  graph::DataPtr value;  // dims = sizes, element type of dtype
  at::ScalarType dtype;
  std::vector<int64_t> sizes;
  int device;
  // The "tpu" tensors it was computed from, when recorded by elementwise() (to_self and to_out
  // check that the written tensor does not partly overlap them).
  std::vector<at::Tensor> inputs = {};
  // The dtype those inputs are converted to (elementwise()'s compute type).
  at::ScalarType common = at::ScalarType::Undefined;
  // The CPU kernel turns TensorIterator's overlap checks off (threshold: writing an element twice
  // writes the same value), so the written tensor may overlap itself and the inputs.
  bool overlap_allowed = false;
};

// Records `op` over `inputs` broadcast together (PyTorch's infer_size and messages). Wrapped CPU
// scalars become constants of the compute type, which is the output type unless `compute` says
// otherwise (then passed to the lowering as ints[0]).
OpResult elementwise(const graph::OpDef& op, const char* name,
                     std::vector<const at::Tensor*> inputs, at::ScalarType out_dtype,
                     graph::Attrs attrs, std::optional<at::ScalarType> compute = std::nullopt);

// Whether the written tensor (self, or out=) may have elements that share memory, as the op's CPU
// kernel decides: kAllowed (no check: reductions, tril, mv, ...); kAsPassed (TensorIterator ops,
// scatter, take, ...: out= is checked as passed, before it is resized); kAsResized (most other
// structured kernels: checked once resized, so an out= that needs resizing passes). Results
// recorded by elementwise() are always checked kAsPassed.
enum class SelfOverlap { kAllowed, kAsPassed, kAsResized };

// TensorIterator's checks of a binary op's destination `dst` (in place: `a` itself), which the CPU
// makes before its kernel's dtype check: no overlap, the broadcast shape, a castable result type.
void check_binary_destination(const at::Tensor& dst, const at::Tensor& a, const at::Tensor& b);

// The compute type of mul and div of `dtype` with second operand `b`: the CPU's kernels
// take a one-element second operand of a float16 or bfloat16 op at its own precision, in float32,
// not rounded to the op's dtype (elementwise()'s `compute`).
std::optional<at::ScalarType> scalar_operand_compute(at::ScalarType dtype, const at::Tensor& b);

// A new tensor holding the result; a result of elementwise() is laid out as TensorIterator lays
// out a new output (dense in its inputs' dim order: channels_last in, channels_last out).
at::Tensor to_new(const OpResult& r);
// A new tensor holding the result in `format` (the CPU kernels that allocate their output in
// input.suggest_memory_format(): cat, upsampling, pooling, padding, normalization).
at::Tensor to_new(const OpResult& r, c10::MemoryFormat format);
// to_new(r, format) without ending the op (for ops with several results).
at::Tensor make_result(const OpResult& r, c10::MemoryFormat format);
// Writes the result into `self` in place: its shape must equal the result's, the result type
// must be castable to self's dtype, self must not partly overlap an input recorded by
// elementwise(), nor overlap itself as `self_overlap` says (PyTorch's messages).
at::Tensor& to_self(at::Tensor& self, const OpResult& r,
                    SelfOverlap self_overlap = SelfOverlap::kAllowed);
// Writes the result into `out`, resizing it as PyTorch's out= does (not when it is an input too);
// the overlap checks of to_self.
at::Tensor& to_out(at::Tensor& out, const OpResult& r,
                   SelfOverlap self_overlap = SelfOverlap::kAllowed);
// The CPU's check of a structured kernel's out= argument: exactly the dtype it would allocate
// (PyTorch's message, which names dtypes by their C++ type names).
void check_out_dtype(const at::Tensor& out, at::ScalarType dtype);
// to_out for ops whose out= must have the result's dtype, with TensorIterator's message (PyTorch's
// unary ops that keep their input's type, clamp by scalars).
at::Tensor& to_same_dtype_out(at::Tensor& out, const OpResult& r);
// to_out for a structured kernel: out must have the result's dtype exactly (no casting).
at::Tensor& to_structured_out(at::Tensor& out, const OpResult& r,
                              SelfOverlap self_overlap = SelfOverlap::kAllowed);
// to_structured_out's checks of `out` for a result of `dtype` and `sizes`, made before the op
// records anything: the CPU checks out= before it reads indices, and Debug mode raises a failed
// device-side index check at once.
void check_structured_out(const at::Tensor& out, at::ScalarType dtype, at::IntArrayRef sizes,
                          SelfOverlap self_overlap);
// Writes `r`, a result composed of other ops' tensors, into `out` (resized; copy_'s checks).
at::Tensor& copy_to_out(at::Tensor& out, const at::Tensor& r);
// A "tpu" tensor composed of other ops, as a result to deliver like a recorded one.
OpResult result_of(const at::Tensor& t);

}  // namespace torch_pjrt::aten

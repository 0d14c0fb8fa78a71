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
};

// Records `op` over `inputs` broadcast together (PyTorch's infer_size and messages). Wrapped CPU
// scalars become constants of the compute type, which is the output type unless `compute` says
// otherwise (then passed to the lowering as ints[0]).
OpResult elementwise(const graph::OpDef& op, const char* name,
                     std::vector<const at::Tensor*> inputs, at::ScalarType out_dtype,
                     graph::Attrs attrs, std::optional<at::ScalarType> compute = std::nullopt);

// A new tensor holding the result.
at::Tensor to_new(const OpResult& r);
// Writes the result into `self` in place: its shape must equal the result's, the result type
// must be castable to self's dtype, and self must not overlap itself or partly overlap an input
// (PyTorch's messages).
at::Tensor& to_self(at::Tensor& self, const OpResult& r);
// Writes the result into `out`, resizing it as PyTorch's out= does (not when it is an input too);
// the overlap checks of to_self.
at::Tensor& to_out(at::Tensor& out, const OpResult& r);
// The CPU's check of a structured kernel's out= argument: exactly the dtype it would allocate
// (PyTorch's message, which names dtypes by their C++ type names).
void check_out_dtype(const at::Tensor& out, at::ScalarType dtype);
// The same for a result composed of other ops' tensors.
at::Tensor& copy_to_out(at::Tensor& out, const at::Tensor& r);
// A "tpu" tensor composed of other ops, as a result to deliver like a recorded one.
OpResult result_of(const at::Tensor& t);

}  // namespace torch_pjrt::aten

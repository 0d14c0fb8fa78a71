// Running a user-supplied StableHLO program on "tpu" tensors (the entry point for custom kernels).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace torch_pjrt::python {

// Compiles `program` (MLIR text with a public @main; cached by text) and runs it on `inputs`, all
// "tpu" tensors on one device, returning one new tensor per result. Errors from the plugin surface
// as RuntimeError carrying its message.
std::vector<at::Tensor> run_stablehlo(const std::string& program,
                                      const std::vector<at::Tensor>& inputs);

}  // namespace torch_pjrt::python

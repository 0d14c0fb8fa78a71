// Custom kernels as torch ops: registering a kernel's StableHLO functions and calling a kernel on
// "tpu" tensors (recorded as one graph node; see lowering/custom_kernel.h).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_pjrt::python {

// Adds _register_custom_kernel, _call_custom_kernel and _registered_custom_kernels to `m`.
void register_custom_kernels(pybind11::module_& m);

}  // namespace torch_pjrt::python

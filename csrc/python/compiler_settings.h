// Bindings for what shapes how programs compile: matmul/convolution precision (torch.tpu.Precision,
// torch.tpu.precision) and XLA compile options (torch.tpu.compiler.custom_compiler_options,
// torch.tpu.allow_excess_precision).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_pjrt::python {

// Adds _matmul_precision, _push_precision, _pop_precision, _set_compile_options and
// _compile_options_key to the _C module.
void register_compiler_settings(pybind11::module_& m);

}  // namespace torch_pjrt::python

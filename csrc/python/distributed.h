// Bindings of the tpu_dist c10d backend (csrc/distributed) in torch_pjrt._C.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_pjrt::python {

void register_distributed(pybind11::module_& m);

}  // namespace torch_pjrt::python

// The key under which a compiled graph finds the program for its inputs: every tensor's device,
// dtype, sizes, strides, storage offset and size and which inputs share a storage, and the values
// of the other inputs, built in one call per replay.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_pjrt::python {

// Adds _graph_signature to the _C module.
void register_graph_signature(pybind11::module_& m);

}  // namespace torch_pjrt::python

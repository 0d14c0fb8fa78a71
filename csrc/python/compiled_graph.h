// Bindings for torch.compile(backend="tpu"): tracing an FX graph's ATen ops into one StableHLO
// program and replaying the compiled program on new input buffers without running Python per op.
#pragma once

#include <pybind11/pybind11.h>

namespace torch_pjrt::python {

// Adds _TraceSession, _CompiledGraph, _Executable, _FusedScope, _compile_stablehlo and
// _load_executable to the _C module.
void register_compiled_graph(pybind11::module_& m);

}  // namespace torch_pjrt::python

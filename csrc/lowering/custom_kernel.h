// Custom kernels: user StableHLO functions (from JAX, Pallas or written by hand) registered once
// and recorded as graph nodes. A node's lowering adds the kernel's functions to the program and
// calls its entry function, so a kernel runs inside whatever program its node ends up in (one op
// in Strict mode, a fused program, a compiled graph) rather than as a launch of its own.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/node.h"

namespace torch_pjrt::lowering {

struct CustomKernel {
  std::string name;       // the torch op's name ("mylib::rmsnorm"): the node's op name
  std::string functions;  // `func.func` definitions, none public, none named @main
  std::string entry;      // the function a node calls, defined in `functions`
  std::vector<hlo::TensorType> inputs, outputs;  // entry's signature
};

// Registers `kernel` (validated: non-empty name, entry defined in `functions`, at least one
// output) and returns its id; a kernel with the same functions, entry and signature as one
// registered before gets that one's id. Kernels live as long as the process. Thread-safe.
int64_t register_kernel(CustomKernel kernel);

// The kernel registered under `id`; throws std::out_of_range for an unknown id.
const CustomKernel& kernel(int64_t id);

// The operation of nodes calling kernel `id` (attrs.ints = {id}): one OpDef per kernel, named
// after it, so error messages and profiles name the kernel.
const graph::OpDef& kernel_op(int64_t id);

// Number of distinct kernels registered (for tests).
size_t registered_kernels();

}  // namespace torch_pjrt::lowering

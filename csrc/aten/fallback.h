// The counted CPU fallback, for kernels that lower some dtypes natively and run the rest on the
// CPU.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace torch_pjrt::aten {

// Runs `op` on the CPU with copies of its "tpu" operands (counted, warned once, or an error under
// TORCH_PJRT_FALLBACK=error), leaving its results on `stack`.
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace torch_pjrt::aten

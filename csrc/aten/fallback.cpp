// The CPU fallback for ops without a lowering: counted per op, warned once per op, and turned into
// an error naming the op when TORCH_PJRT_FALLBACK=error.
#include "aten/fallback.h"

#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "aten/tensor_bridge.h"
#include "runtime/metrics.h"

namespace torch_pjrt::aten {

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = c10::toString(op.schema().operator_name());
  const char* mode = std::getenv("TORCH_PJRT_FALLBACK");
  TORCH_CHECK_NOT_IMPLEMENTED(
      !(mode && std::strcmp(mode, "error") == 0), "tpu: the operator '", name,
      "' has no tpu lowering and TORCH_PJRT_FALLBACK=error forbids running it on the CPU");
  runtime::counters().count_fallback(name);
  static std::mutex mutex;
  static std::set<std::string> warned;
  bool first;
  {
    std::lock_guard<std::mutex> lock(mutex);
    first = warned.insert(name).second;
  }
  if (first) {
    TORCH_WARN("tpu: the operator '", name,
               "' has no tpu lowering; it runs on the CPU with copies to and from the device. "
               "This is slow; set TORCH_PJRT_FALLBACK=error to make it an error.");
  }
  HostReadScope op_reads(false);  // its copies of the operands are the op's host round trips
  at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

}  // namespace torch_pjrt::aten

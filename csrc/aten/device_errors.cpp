// Device failures that PyTorch has an exception type for, raised as that type: a program that
// ran out of device memory is torch.OutOfMemoryError (a RuntimeError), as on CUDA.
#include <c10/util/Exception.h>

#include "graph/graph.h"

namespace torch_pjrt::aten {
namespace {

void raise_out_of_memory(const std::string& message) {
  TORCH_CHECK_WITH(OutOfMemoryError, false, message);
}

const bool raiser_installed = (graph::set_out_of_memory_raiser(&raise_out_of_memory), true);

}  // namespace
}  // namespace torch_pjrt::aten

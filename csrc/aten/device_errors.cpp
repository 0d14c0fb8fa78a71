// Device failures that PyTorch has an exception type for, raised as that type: a program or a
// transfer that ran out of device memory is torch.OutOfMemoryError, as on CUDA. The graph raises
// its out-of-memory failures through raise_out_of_memory, installed here.
#include "aten/device_errors.h"

#include <c10/util/Exception.h>

#include "graph/graph.h"

namespace torch_pjrt::aten {

void raise_out_of_memory(const std::string& message) {
  TORCH_CHECK_WITH(OutOfMemoryError, false, message);
}

namespace {
const bool raiser_installed = (graph::set_out_of_memory_raiser(&raise_out_of_memory), true);
}  // namespace

}  // namespace torch_pjrt::aten

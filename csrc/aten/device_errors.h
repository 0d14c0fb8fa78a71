// Device failures that PyTorch has an exception type for, raised as that type.
#pragma once

#include <string>

namespace torch_pjrt::aten {

// torch.OutOfMemoryError (a RuntimeError), as CUDA raises when device memory runs out.
[[noreturn]] void raise_out_of_memory(const std::string& message);

}  // namespace torch_pjrt::aten

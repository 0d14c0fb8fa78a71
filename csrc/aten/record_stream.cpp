// Tensor.record_stream on "tpu": CUDA's caching allocator must be told which streams use a block
// before it reuses it. Here a storage's memory is PJRT buffers that every program using them holds
// until it has run (graph nodes keep their operands, PJRT its executions' inputs), so freeing a
// tensor while another stream's work reads it is already safe: the call checks its stream and
// records nothing (device::Allocator::recordStream).
#include <ATen/ATen.h>
#include <torch/library.h>

#include "device/allocator.h"

namespace torch_pjrt::aten {
namespace {

void record_stream(at::Tensor& self, c10::Stream stream) {
  TORCH_CHECK(stream.device_type() == c10::DeviceType::PrivateUse1,
              "record_stream: expected a stream of the tensor's device ", self.device(), ", got ",
              stream);
  device::allocator().recordStream(self.storage().data_ptr(), stream);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", record_stream); }

}  // namespace torch_pjrt::aten

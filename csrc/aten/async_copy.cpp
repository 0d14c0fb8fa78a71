// non_blocking copies between pinned host memory and "tpu" (see async_copy.h).
#include "aten/async_copy.h"

#include "aten/tensor_bridge.h"
#include "device/host_allocator.h"
#include "device/runtime_state.h"
#include "graph/trace_mode.h"
#include "runtime/async_upload.h"
#include "runtime/buffer.h"
#include "runtime/timeline.h"

namespace torch_pjrt::aten {
namespace {

const auto kDeviceToHost = std::make_shared<const std::string>("copy device to host");
const auto kHostToDevice = std::make_shared<const std::string>("copy host to device");

}  // namespace

bool copy_to_pinned(const at::Tensor& self, const at::Tensor& dst) {
  const at::ScalarType dtype = dst.scalar_type();
  if (at::isFloat8Type(dtype) || dtype == at::kComplexHalf || dtype == at::kFloat4_e2m1fn_x2 ||
      graph::trace_active()) {
    return false;
  }
  device::check_not_forked();
  HostReadScope user(true);
  const int device = device_index(self);
  graph::DataPtr value = convert(read(self.expand_as(dst)), dtype);
  graph::materialize({value});  // launches the pending work with it, as a sync point would
  auto buffer = graph::buffer_of(value);
  runtime::Client& client = device::client();
  const int64_t start = runtime::now_ns();
  PJRT_Event* done = buffer->to_host_async(dst.data_ptr(), dst.nbytes());
  auto transfer = client.timeline().launched(client.api(), done, device, kDeviceToHost, start);
  device::record_transfer(dst.data_ptr(), [transfer] { return transfer->done(); });
  return true;
}

graph::DataPtr upload_pinned(const at::Tensor& src, int device) {
  runtime::Client& client = device::client();
  const int64_t start = runtime::now_ns();
  const runtime::ElementType type = stored_type(src.scalar_type());
  runtime::AsyncUpload upload =
      runtime::upload_async(client, src.data_ptr(), type, src.sizes().vec(), device);
  if (upload.buffer) {
    device::record_transfer(src.data_ptr(), [released = upload.host_released] {
      return released->load(std::memory_order_acquire);
    });
  } else {  // no transfer manager: the plugin's own asynchronous copy, where it has one
    PJRT_Event* done = nullptr;
    upload.buffer =
        client.buffer_from_host_async(src.data_ptr(), type, src.sizes().vec(), device, &done);
    auto transfer = std::make_shared<runtime::Completion>(client.api(), done, device, kHostToDevice,
                                                          runtime::launch_tag(), start);
    device::record_transfer(src.data_ptr(), [transfer] { return transfer->done(); });
  }
  // Events and synchronization wait for the value to be there.
  client.timeline().launched(client.api(), upload.buffer->ready_event(), device, kHostToDevice,
                             start);
  return graph::from_buffer(std::move(upload.buffer));
}

}  // namespace torch_pjrt::aten

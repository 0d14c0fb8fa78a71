// Host-to-device copies that return before the data moved, through the plugin's transfer manager
// (PJRT_Client_CreateBuffersForAsyncHostToDevice): the buffer exists at once and becomes ready
// once a thread of ours has handed the bytes over (PJRT_AsyncHostToDeviceTransferManager_
// TransferData, which the CPU plugins carry out within the call, so it must not run on the
// caller's thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "buffer.h"
#include "client.h"

namespace torch_pjrt::runtime {

struct AsyncUpload {
  std::shared_ptr<Buffer> buffer;  // null when the plugin has no transfer manager
  // Turns true once the plugin no longer reads the host memory.
  std::shared_ptr<const std::atomic<bool>> host_released;
};

// Starts copying `data` (dense, row-major, `dims` of `type`) to device `device`; `data` must stay
// alive and unchanged until host_released. A plugin without the transfer manager, or refusing it,
// gives a null buffer (nothing started). A failed transfer fails the buffer: its readers raise.
AsyncUpload upload_async(Client& client, const void* data, ElementType type,
                         const std::vector<int64_t>& dims, int device);

}  // namespace torch_pjrt::runtime

// Asynchronous host-to-device copies through the plugin's transfer manager (see async_upload.h).
#include "async_upload.h"

#include <cstddef>
#include <string>
#include <thread>

#include "error.h"
#include "event.h"
#include "metrics.h"

namespace torch_pjrt::runtime {
namespace {

bool has_transfer_manager(const PJRT_Api* api) {
  return api->struct_size >
             offsetof(PJRT_Api, PJRT_AsyncHostToDeviceTransferManager_SetBufferError) &&
         api->PJRT_Client_CreateBuffersForAsyncHostToDevice != nullptr &&
         api->PJRT_AsyncHostToDeviceTransferManager_TransferData != nullptr &&
         api->PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer != nullptr &&
         api->PJRT_AsyncHostToDeviceTransferManager_SetBufferError != nullptr &&
         api->PJRT_AsyncHostToDeviceTransferManager_Destroy != nullptr &&
         api->PJRT_Device_DefaultMemory != nullptr;
}

void destroy_manager(const PJRT_Api* api, PJRT_AsyncHostToDeviceTransferManager* manager) {
  PJRT_AsyncHostToDeviceTransferManager_Destroy_Args args{};
  args.struct_size = PJRT_AsyncHostToDeviceTransferManager_Destroy_Args_STRUCT_SIZE;
  args.transfer_manager = manager;
  try {
    check(api, api->PJRT_AsyncHostToDeviceTransferManager_Destroy(&args),
          "PJRT_AsyncHostToDeviceTransferManager_Destroy");
  } catch (const PjrtError&) {
  }
}

// On our thread: hands the bytes over, waits until the plugin is done with them, or fails the
// buffer with the plugin's error.
void transfer(std::shared_ptr<const Client> client, PJRT_AsyncHostToDeviceTransferManager* manager,
              const void* data, int64_t nbytes, std::shared_ptr<std::atomic<bool>> released) {
  const PJRT_Api* api = client->api();
  PJRT_AsyncHostToDeviceTransferManager_TransferData_Args args{};
  args.struct_size = PJRT_AsyncHostToDeviceTransferManager_TransferData_Args_STRUCT_SIZE;
  args.transfer_manager = manager;
  args.buffer_index = 0;
  args.data = data;
  args.offset = 0;
  args.transfer_size = nbytes;
  args.is_last_transfer = true;
  try {
    check(api, api->PJRT_AsyncHostToDeviceTransferManager_TransferData(&args),
          "PJRT_AsyncHostToDeviceTransferManager_TransferData");
    Event(api, args.done_with_h2d_transfer).await("host to device transfer");
  } catch (const PjrtError& e) {
    const std::string message = e.what();
    PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args fail{};
    fail.struct_size = PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args_STRUCT_SIZE;
    fail.transfer_manager = manager;
    fail.buffer_index = 0;
    fail.error_code = e.code();
    fail.error_message = message.data();
    fail.error_message_size = message.size();
    try {
      check(api, api->PJRT_AsyncHostToDeviceTransferManager_SetBufferError(&fail),
            "PJRT_AsyncHostToDeviceTransferManager_SetBufferError");
    } catch (const PjrtError&) {
    }
  }
  destroy_manager(api, manager);
  released->store(true, std::memory_order_release);
}

}  // namespace

AsyncUpload upload_async(Client& client, const void* data, ElementType type,
                         const std::vector<int64_t>& dims, int device) {
  const PJRT_Api* api = client.api();
  if (!has_transfer_manager(api)) return {};
  PJRT_Device_DefaultMemory_Args memory{};
  memory.struct_size = PJRT_Device_DefaultMemory_Args_STRUCT_SIZE;
  memory.device = client.device(device);
  PJRT_ShapeSpec shape{};
  shape.struct_size = PJRT_ShapeSpec_STRUCT_SIZE;
  shape.dims = dims.data();
  shape.num_dims = dims.size();
  shape.element_type = to_pjrt(type);
  PJRT_Client_CreateBuffersForAsyncHostToDevice_Args create{};
  create.struct_size = PJRT_Client_CreateBuffersForAsyncHostToDevice_Args_STRUCT_SIZE;
  create.client = client.raw();
  create.shape_specs = &shape;
  create.num_shape_specs = 1;
  PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args retrieve{};
  retrieve.struct_size = PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args_STRUCT_SIZE;
  try {
    check(api, api->PJRT_Device_DefaultMemory(&memory), "PJRT_Device_DefaultMemory");
    create.memory = memory.memory;
    check(api, api->PJRT_Client_CreateBuffersForAsyncHostToDevice(&create),
          "PJRT_Client_CreateBuffersForAsyncHostToDevice");
    retrieve.transfer_manager = create.transfer_manager;
    check(api, api->PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer(&retrieve),
          "PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer");
  } catch (const PjrtError&) {
    destroy_manager(api, create.transfer_manager);
    return {};  // the plugin declines: the caller copies another way
  }
  int64_t nbytes = static_cast<int64_t>(element_size(type));
  for (int64_t d : dims) nbytes *= d;
  auto released = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<Buffer> buffer;
  try {
    buffer = std::make_shared<Buffer>(client.shared_from_this(), retrieve.buffer_out, device);
  } catch (...) {
    destroy_manager(api, create.transfer_manager);
    throw;
  }
  std::thread(transfer, client.shared_from_this(), create.transfer_manager, data, nbytes, released)
      .detach();
  counters().host_to_device_bytes += nbytes;
  return {std::move(buffer), std::move(released)};
}

}  // namespace torch_pjrt::runtime

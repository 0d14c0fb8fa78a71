// Buffer: shape queries, device-to-host copies and readiness of a PJRT_Buffer.
#include "buffer.h"

#include <stdexcept>
#include <string>

#include "client.h"
#include "error.h"
#include "event.h"
#include "fault.h"
#include "metrics.h"

namespace torch_pjrt::runtime {

namespace {

void destroy_buffer(const PJRT_Api* api, PJRT_Buffer* buffer) {
  PJRT_Buffer_Destroy_Args args{};
  args.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
  args.buffer = buffer;
  try {
    check(api, api->PJRT_Buffer_Destroy(&args), "PJRT_Buffer_Destroy");
  } catch (const PjrtError&) {
  }
}

}  // namespace

Buffer::Buffer(std::shared_ptr<const Client> client, PJRT_Buffer* buffer, int device)
    : client_(std::move(client)), buffer_(buffer), device_(device) {
  const PJRT_Api* api = client_->api();
  try {
    PJRT_Buffer_ElementType_Args type{};
    type.struct_size = PJRT_Buffer_ElementType_Args_STRUCT_SIZE;
    type.buffer = buffer_;
    check(api, api->PJRT_Buffer_ElementType(&type), "PJRT_Buffer_ElementType");
    type_ = from_pjrt(type.type);

    PJRT_Buffer_Dimensions_Args dims{};
    dims.struct_size = PJRT_Buffer_Dimensions_Args_STRUCT_SIZE;
    dims.buffer = buffer_;
    check(api, api->PJRT_Buffer_Dimensions(&dims), "PJRT_Buffer_Dimensions");
    dims_.assign(dims.dims, dims.dims + dims.num_dims);

    PJRT_Buffer_OnDeviceSizeInBytes_Args size{};
    size.struct_size = PJRT_Buffer_OnDeviceSizeInBytes_Args_STRUCT_SIZE;
    size.buffer = buffer_;
    check(api, api->PJRT_Buffer_OnDeviceSizeInBytes(&size), "PJRT_Buffer_OnDeviceSizeInBytes");
    device_bytes_ = static_cast<int64_t>(size.on_device_size_in_bytes);
    client_->memory().add(device_, device_bytes_, static_cast<int64_t>(byte_size()));
  } catch (...) {
    destroy_buffer(api, buffer_);
    throw;
  }
}

Buffer::~Buffer() {
  stop_counting();
  destroy_buffer(client_->api(), buffer_);
}

void Buffer::stop_counting() const {
  const int was = accounting_.exchange(kGone);
  if (was != kGone) {
    client_->memory().remove(device_, device_bytes_, static_cast<int64_t>(byte_size()),
                             was == kCache);
  }
}

void Buffer::mark_cache() {
  int expected = kValue;
  if (accounting_.compare_exchange_strong(expected, kCache)) {
    client_->memory().move_to_cache(device_, device_bytes_, static_cast<int64_t>(byte_size()));
  }
}

void Buffer::forget_if_donated() const {
  if (accounting_.load() == kGone) return;
  const PJRT_Api* api = client_->api();
  PJRT_Buffer_IsDeleted_Args args{};
  args.struct_size = PJRT_Buffer_IsDeleted_Args_STRUCT_SIZE;
  args.buffer = buffer_;
  try {
    check(api, api->PJRT_Buffer_IsDeleted(&args), "PJRT_Buffer_IsDeleted");
  } catch (const PjrtError&) {
    return;  // statistics only: the buffer keeps counting until it is destroyed
  }
  if (args.is_deleted) stop_counting();
}

int64_t Buffer::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

void Buffer::to_host(void* dst, size_t nbytes) const {
  // PJRT treats a null dst as a size query, so an empty copy only waits for the value.
  if (nbytes == 0 && nbytes == byte_size()) return await_ready();
  Event(client_->api(), to_host_async(dst, nbytes)).await("PJRT_Buffer_ToHostBuffer");
}

PJRT_Event* Buffer::to_host_async(void* dst, size_t nbytes) const {
  if (nbytes != byte_size()) {
    throw std::invalid_argument("to_host: destination is " + std::to_string(nbytes) +
                                " bytes, buffer is " + std::to_string(byte_size()));
  }
  if (nbytes == 0) return ready_event();
  if (dst == nullptr) throw std::invalid_argument("to_host: null destination");
  inject_fault("to_host");

  const PJRT_Api* api = client_->api();
  PJRT_Buffer_ToHostBuffer_Args args{};
  args.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE;
  args.src = buffer_;
  args.dst = dst;
  args.dst_size = nbytes;
  check(api, api->PJRT_Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  counters().device_to_host_bytes += static_cast<int64_t>(nbytes);
  return args.event;
}

PJRT_Event* Buffer::ready_event() const {
  const PJRT_Api* api = client_->api();
  PJRT_Buffer_ReadyEvent_Args args{};
  args.struct_size = PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE;
  args.buffer = buffer_;
  check(api, api->PJRT_Buffer_ReadyEvent(&args), "PJRT_Buffer_ReadyEvent");
  return args.event;
}

void Buffer::await_ready() const {
  Event(client_->api(), ready_event()).await("PJRT_Buffer_ReadyEvent");
}

}  // namespace torch_pjrt::runtime

// RAII wrapper of a device-resident PJRT_Buffer; counts its bytes in the client's MemoryLedger.
#pragma once

#include <pjrt_c_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "element_type.h"

namespace torch_pjrt::runtime {

class Client;

class Buffer {
 public:
  // Takes ownership of `buffer`; keeps `client` alive while the buffer lives.
  Buffer(std::shared_ptr<const Client> client, PJRT_Buffer* buffer, int device);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  PJRT_Buffer* raw() const { return buffer_; }
  int device() const { return device_; }
  ElementType element_type() const { return type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t num_elements() const;
  size_t byte_size() const { return num_elements() * element_size(type_); }
  // Bytes the buffer occupies on the device (PJRT_Buffer_OnDeviceSizeInBytes; layouts may pad).
  int64_t device_bytes() const { return device_bytes_; }

  // Counts this buffer as held by a runtime cache instead of as a value (see MemoryLedger).
  void mark_cache();
  // Called after a launch that took this buffer as an argument: a buffer the computation consumed
  // (donated, so PJRT deleted it) stops counting, since the output that reuses its memory counts.
  void forget_if_donated() const;

  // Copies the whole buffer into `dst` (dense row-major, `nbytes` must equal byte_size(), else
  // std::invalid_argument) and blocks until done. An error of the computation that produced this
  // buffer surfaces here as PjrtError.
  void to_host(void* dst, size_t nbytes) const;
  // Starts that copy and returns its event (the caller's to destroy) without waiting: `dst` must
  // stay alive until the event completes. Same checks as to_host.
  PJRT_Event* to_host_async(void* dst, size_t nbytes) const;
  // The event of the buffer's value being ready (the caller's to destroy).
  PJRT_Event* ready_event() const;
  // Blocks until the buffer's value is computed; throws PjrtError if its computation failed.
  void await_ready() const;

 private:
  void stop_counting() const;

  std::shared_ptr<const Client> client_;
  PJRT_Buffer* buffer_;
  int device_;
  ElementType type_;
  std::vector<int64_t> dims_;
  int64_t device_bytes_ = 0;
  enum Accounting : int { kValue, kCache, kGone };
  mutable std::atomic<int> accounting_{kValue};
};

}  // namespace torch_pjrt::runtime

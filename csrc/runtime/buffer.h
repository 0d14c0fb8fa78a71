// RAII wrapper of a device-resident PJRT_Buffer.
#pragma once

#include <pjrt_c_api.h>

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

  // Copies the whole buffer into `dst` (dense row-major, `nbytes` must equal byte_size(), else
  // std::invalid_argument) and blocks until done. An error of the computation that produced this
  // buffer surfaces here as PjrtError.
  void to_host(void* dst, size_t nbytes) const;
  // Blocks until the buffer's value is computed; throws PjrtError if its computation failed.
  void await_ready() const;

 private:
  std::shared_ptr<const Client> client_;
  PJRT_Buffer* buffer_;
  int device_;
  ElementType type_;
  std::vector<int64_t> dims_;
};

}  // namespace torch_pjrt::runtime

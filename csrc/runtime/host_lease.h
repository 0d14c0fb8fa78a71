// HostLease: host memory lent to a buffer (Client::buffer_sharing_host) and the plugin's word,
// from its done-with-host-buffer event, that it no longer reads it.
#pragma once

#include <pjrt_c_api.h>

#include <atomic>

namespace torch_pjrt::runtime {

class HostLease {
 public:
  explicit HostLease(const PJRT_Api* api) : api_(api) {}
  HostLease(const HostLease&) = delete;
  HostLease& operator=(const HostLease&) = delete;
  // Only once released() (the plugin's callback then has run and left this object alone).
  ~HostLease();

  // True once the plugin is done with the memory; set on a plugin thread.
  bool released() const { return released_.load(std::memory_order_acquire); }

  // Takes the transfer's done event: released() turns true when it completes (at once when it
  // already has, or when the plugin cannot watch it: then this waits for it).
  void watch(PJRT_Event* done);

 private:
  static void on_ready(PJRT_Error* error, void* self);

  const PJRT_Api* api_;
  PJRT_Event* event_ = nullptr;
  std::atomic<bool> released_{false};
};

}  // namespace torch_pjrt::runtime

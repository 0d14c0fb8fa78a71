// HostLease: watching a transfer's done-with-host-buffer event from a plugin thread.
#include "host_lease.h"

#include "error.h"
#include "event.h"

namespace torch_pjrt::runtime {

HostLease::~HostLease() { destroy_event(api_, event_); }

void HostLease::watch(PJRT_Event* done) {
  event_ = done;
  if (done == nullptr) {
    released_.store(true, std::memory_order_release);
    return;
  }
  when_ready(api_, done, &HostLease::on_ready, this);
}

void HostLease::on_ready(PJRT_Error* error, void* self) {
  auto* lease = static_cast<HostLease*>(self);
  // A failed transfer also ends the plugin's use of the memory; its error reaches whoever reads
  // the buffer.
  if (error != nullptr) {
    try {
      check(lease->api_, error, "host transfer");
    } catch (const PjrtError&) {
    }
  }
  lease->released_.store(true, std::memory_order_release);
}

}  // namespace torch_pjrt::runtime

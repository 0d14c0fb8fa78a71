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
  PJRT_Event_OnReady_Args args{};
  args.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE;
  args.event = done;
  args.callback = &HostLease::on_ready;
  args.user_arg = this;
  PJRT_Error* refused = api_->PJRT_Event_OnReady(&args);
  if (refused == nullptr) return;
  try {
    check(api_, refused, "PJRT_Event_OnReady");
  } catch (const PjrtError&) {
  }
  PJRT_Event_Await_Args await{};
  await.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
  await.event = done;
  on_ready(api_->PJRT_Event_Await(&await), this);
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

// Event: awaiting, polling and destroying a PJRT_Event.
#include "event.h"

#include "error.h"

namespace torch_pjrt::runtime {

void destroy_event(const PJRT_Api* api, PJRT_Event* event) {
  if (event == nullptr) return;
  PJRT_Event_Destroy_Args args{};
  args.struct_size = PJRT_Event_Destroy_Args_STRUCT_SIZE;
  args.event = event;
  if (PJRT_Error* error = api->PJRT_Event_Destroy(&args)) {
    try {
      check(api, error, "PJRT_Event_Destroy");
    } catch (const PjrtError&) {
    }
  }
}

void when_ready(const PJRT_Api* api, PJRT_Event* event, PJRT_Event_OnReadyCallback callback,
                void* user_arg) {
  PJRT_Event_OnReady_Args args{};
  args.struct_size = PJRT_Event_OnReady_Args_STRUCT_SIZE;
  args.event = event;
  args.callback = callback;
  args.user_arg = user_arg;
  PJRT_Error* refused = api->PJRT_Event_OnReady(&args);
  if (refused == nullptr) return;
  try {
    check(api, refused, "PJRT_Event_OnReady");
  } catch (const PjrtError&) {
  }
  PJRT_Event_Await_Args await{};
  await.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
  await.event = event;
  callback(api->PJRT_Event_Await(&await), user_arg);
}

Event::~Event() { destroy_event(api_, event_); }

bool Event::ready() const {
  if (event_ == nullptr) return true;
  PJRT_Event_IsReady_Args args{};
  args.struct_size = PJRT_Event_IsReady_Args_STRUCT_SIZE;
  args.event = event_;
  check(api_, api_->PJRT_Event_IsReady(&args), "PJRT_Event_IsReady");
  return args.is_ready;
}

void Event::await(const char* what) const {
  if (event_ == nullptr) return;
  PJRT_Event_Await_Args args{};
  args.struct_size = PJRT_Event_Await_Args_STRUCT_SIZE;
  args.event = event_;
  check(api_, api_->PJRT_Event_Await(&args), what);
}

}  // namespace torch_pjrt::runtime

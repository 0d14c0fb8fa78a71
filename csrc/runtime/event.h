// RAII wrapper of PJRT_Event: wait for completion and surface its error.
#pragma once

#include <pjrt_c_api.h>

namespace torch_pjrt::runtime {

// Destroys `event` (null does nothing); never throws: a failed destroy only leaks the event.
void destroy_event(const PJRT_Api* api, PJRT_Event* event);
// Has `callback(error, user_arg)` called when `event` completes: on a plugin thread
// (PJRT_Event_OnReady), or here, after waiting for it, when the plugin refuses to watch it.
void when_ready(const PJRT_Api* api, PJRT_Event* event, PJRT_Event_OnReadyCallback callback,
                void* user_arg);

class Event {
 public:
  Event(const PJRT_Api* api, PJRT_Event* event) : api_(api), event_(event) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  bool ready() const;
  // Blocks until the event completes; throws PjrtError if it completed with an error.
  void await(const char* what) const;

 private:
  const PJRT_Api* api_;
  PJRT_Event* event_;
};

}  // namespace torch_pjrt::runtime

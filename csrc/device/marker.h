// A marker in a device's stream of work, what "tpu" events record: every stream of a device runs
// in launch order on the device's one queue, so a marker waits for all work launched on the
// device before it. Its time is when the device reached it: when that work finished, or when the
// marker was recorded if the device was idle by then.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/timeline.h"

namespace torch_pjrt::device {

struct Marker {
  int device = -1;
  int64_t record_ns = 0;  // runtime::now_ns() clock
  std::vector<runtime::CompletionPtr> work;
};

// Launches the pending work (deferred ops of Fused mode) and marks the device's queue behind it.
Marker record_marker(int device);
bool marker_reached(const Marker& marker);
// Blocks until the device reached the marker; raises the error of failed work before it.
void wait_marker(const Marker& marker);
// Waits, then returns when the device reached the marker.
int64_t marker_time_ns(const Marker& marker);

// graph::synchronize(), then waits for everything launched on every device, programs that the
// graph does not track included (run_stablehlo's, custom executables); raises the first error.
void synchronize_all();

// What a recorded "tpu" event (the opaque pointer of a c10::Event) holds.
struct EventState {
  Marker marker;
  bool timing = false;  // created with enable_timing=True
};
// Milliseconds of device time from `start` to `end`, with c10::Event's checks and messages: both
// recorded (ValueError), timing (ValueError), completed (RuntimeError), on the same device.
double elapsed_ms(const EventState* start, const EventState* end);

}  // namespace torch_pjrt::device

// Markers: snapshots of the executions running on a device, from the client's Timeline.
#include "device/marker.h"

#include <c10/util/Exception.h>

#include <algorithm>

#include "device/runtime_state.h"
#include "graph/graph.h"
#include "graph/trace_mode.h"

namespace torch_pjrt::device {

Marker record_marker(int device) {
  check_device_index(device);
  // A compiled graph's trace records its ops into one program; launching mid-trace would split it.
  if (!graph::trace_active()) graph::materialize();
  Marker m;
  m.device = device;
  m.work = client().timeline().running(device);
  m.record_ns = runtime::now_ns();
  return m;
}

bool marker_reached(const Marker& marker) {
  return std::all_of(marker.work.begin(), marker.work.end(),
                     [](const runtime::CompletionPtr& c) { return c->done(); });
}

void wait_marker(const Marker& marker) {
  for (const auto& c : marker.work) {
    c->wait();
    const std::string error = c->error();
    TORCH_CHECK(error.empty(), "tpu: work launched before the event failed: ", error);
  }
}

int64_t marker_time_ns(const Marker& marker) {
  int64_t t = marker.record_ns;
  for (const auto& c : marker.work) {
    c->wait();
    t = std::max(t, c->finish_ns());
  }
  return t;
}

void synchronize_all() {
  graph::synchronize();
  const int count = device_count();
  for (int d = 0; d < count; ++d) {
    for (const auto& c : client().timeline().running(d)) {
      c->wait();
      const std::string error = c->error();
      TORCH_CHECK(error.empty(), "tpu: a launched program failed: ", error);
    }
  }
}

double elapsed_ms(const EventState* start, const EventState* end) {
  TORCH_CHECK_VALUE(start != nullptr && end != nullptr,
                    "Both events must be recorded before calculating elapsed time.");
  TORCH_CHECK_VALUE(start->timing && end->timing,
                    "Both events must be created with argument 'enable_timing=True'.");
  TORCH_CHECK(marker_reached(start->marker) && marker_reached(end->marker),
              "Both events must be completed before calculating elapsed time.");
  TORCH_CHECK(start->marker.device == end->marker.device,
              "tpu: elapsed_time: the events were recorded on different devices (",
              start->marker.device, " and ", end->marker.device, ")");
  return static_cast<double>(marker_time_ns(end->marker) - marker_time_ns(start->marker)) * 1e-6;
}

}  // namespace torch_pjrt::device

// Device guard for "tpu": current device and current stream per thread, streams and events.
// A device has one queue of launched work, and PJRT orders every buffer's readers after its
// writer, so streams are names for that queue: a new stream is a new id, and waiting on an event
// or a stream adds no ordering the data does not already have. An event is a device::EventState:
// complete once all work launched on its device before it finished, whatever the stream.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <atomic>
#include <vector>

#include "device/marker.h"
#include "device/runtime_state.h"
#include "graph/graph.h"

namespace torch_pjrt::device {
namespace {

constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;

// The calling thread's current stream id per device index (0, the default stream, if unset).
thread_local std::vector<c10::StreamId> current_streams;

c10::Device with_index(c10::Device d) {
  return d.has_index() ? d : c10::Device(kType, static_cast<c10::DeviceIndex>(current_device()));
}

c10::StreamId& current_stream_id(c10::Device d) {
  const auto index = static_cast<size_t>(with_index(d).index());
  if (index >= current_streams.size()) current_streams.resize(index + 1, 0);
  return current_streams[index];
}

c10::Stream new_stream(c10::Device d) {
  static std::atomic<c10::StreamId> next{1};
  return c10::Stream(c10::Stream::UNSAFE, with_index(d), next++);
}

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device d) const override {
    c10::Device old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override {
    return c10::Device(kType, static_cast<c10::DeviceIndex>(current_device()));
  }
  void setDevice(c10::Device d) const override { set_current_device(d.index()); }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      set_current_device(d.index());
    } catch (...) {
    }
  }
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::UNSAFE, with_index(d), current_stream_id(d));
  }
  c10::Stream getDefaultStream(c10::Device d) const override {
    return c10::Stream(c10::Stream::DEFAULT, with_index(d));
  }
  c10::Stream getNewStream(c10::Device d, int priority) const override { return new_stream(d); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool high_priority) const override {
    return new_stream(d);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    c10::StreamId& id = current_stream_id(s.device());
    const c10::Stream old(c10::Stream::UNSAFE, s.device(), id);
    id = s.id();
    return old;
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(device_count());
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "tpu: event device index ", device_index,
                " does not match the recording stream's device index ", stream.device_index());
    if (*event == nullptr) *event = new EventState;
    auto* e = static_cast<EventState*>(*event);
    e->marker = record_marker(stream.device_index());
    // torch.Event(enable_timing=True) asks for the backend's default event, which times.
    e->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
  }
  // Work on every stream of a device already runs in launch order.
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void* event) const override {
    return event == nullptr || marker_reached(static_cast<EventState*>(event)->marker);
  }
  void synchronizeEvent(void* event) const override {
    if (event != nullptr) wait_marker(static_cast<EventState*>(event)->marker);
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    return elapsed_ms(static_cast<EventState*>(start), static_cast<EventState*>(end));
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<EventState*>(event);
  }

  bool queryStream(const c10::Stream& stream) const override {
    return marker_reached(record_marker(stream.device_index()));
  }
  void synchronizeStream(const c10::Stream&) const override { synchronize_all(); }
  void synchronizeDevice(const c10::DeviceIndex) const override { synchronize_all(); }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

}  // namespace
}  // namespace torch_pjrt::device

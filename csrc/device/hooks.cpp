// PrivateUse1 hooks for "tpu": every method that throws by default is overridden.
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include "device/allocator.h"
#include "device/generator.h"
#include "device/host_allocator.h"
#include "device/runtime_state.h"
#include "graph/graph.h"
#include "graph/trace_mode.h"

namespace torch_pjrt::device {
namespace {

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex index) const override {
    return device_count() > 0 && client().has_device(index);
  }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(device_count());
  }
  void setCurrentDevice(c10::DeviceIndex index) const override { set_current_device(index); }
  c10::DeviceIndex getCurrentDevice() const override {
    return static_cast<c10::DeviceIndex>(current_device());
  }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
    const auto old = getCurrentDevice();
    set_current_device(index);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override {
    return exchangeDevice(index);
  }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    return default_generator(index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    return at::make_generator<Generator>(index < 0 ? current_device() : index);
  }
  at::Device getDeviceFromPtr(void* data) const override {
    return at::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device_of(data)));
  }
  bool isPinnedPtr(const void* data) const override { return is_pinned(data); }
  at::Allocator* getPinnedMemoryAllocator() const override { return &pinned_allocator(); }
  // untyped_storage().resize_(n), used e.g. by FSDP2 to free and re-grow parameter storage.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t nbytes) const override {
    // Not an ATen op, so no op boundary follows: the copy runs now (a compiled graph's trace
    // keeps recording).
    if (resize_storage(storage, nbytes) && !graph::trace_active()) graph::materialize();
  }
};

struct Registrar {
  Registrar() { at::RegisterPrivateUse1HooksInterface(new Hooks); }
} registrar;

}  // namespace
}  // namespace torch_pjrt::device

// The host allocator of "tpu" (torch.accelerator's empty_host_cache, host memory stats, pinned
// tensors): host staging memory is ordinary memory, which PJRT copies from during the call, so
// there is no cache to empty and no event to record. Without a registered one, PyTorch's
// torch.accelerator.empty_host_cache() dereferences a null allocator (vLLM calls it at exit).
#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/CPUAllocator.h>

namespace torch_pjrt::device {
namespace {

struct HostAllocator final : at::HostAllocator {
  at::DataPtr allocate(size_t n) override { return c10::GetCPUAllocator()->allocate(n); }
  at::DeleterFnPtr raw_deleter() const override { return c10::GetCPUAllocator()->raw_deleter(); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
  bool record_event(void*, void*, c10::Stream) override { return true; }
  void empty_cache() override {}
  at::HostStats get_stats() override { return {}; }
  void reset_accumulated_stats() override {}
  void reset_peak_stats() override {}
};

HostAllocator allocator;
at::HostAllocatorRegistry<c10::DeviceType::PrivateUse1> registry(&allocator);

}  // namespace
}  // namespace torch_pjrt::device

// Pinned host memory of "tpu" (pin_memory(), pin_memory=True, DataLoader's pinning): blocks this
// allocator tracks, registered with the plugin for direct transfers where it offers that
// (PJRT_Client_DmaMap), else page-aligned ordinary memory. Asynchronous copies to and from a block
// record their transfer on it, and a freed block is released only once they completed, as CUDA's
// CachingHostAllocator holds a block until its recorded events completed.
#pragma once

#include <ATen/core/CachingHostAllocator.h>

#include <functional>

namespace torch_pjrt::device {

at::HostAllocator& pinned_allocator();
// Whether `ptr` points into a live pinned block.
bool is_pinned(const void* ptr);
// Keeps the pinned block holding `ptr` from being released until `done()` (a transfer's
// completion; called under the allocator's lock, so it must not allocate pinned memory).
void record_transfer(const void* ptr, std::function<bool()> done);
// Whether pinned blocks are registered with the plugin (it accepted PJRT_Client_DmaMap).
bool pinned_dma_mapped();

}  // namespace torch_pjrt::device

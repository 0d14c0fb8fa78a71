// The "tpu" storage allocator: a storage's DataPtr context owns a graph::Slot (the storage's
// device contents); its data pointer is an address of its own, never dereferenced on the host.
// Its statistics (torch.accelerator.memory_*, torch.tpu.memory_*) are the runtime's accounting of
// live device buffers (runtime::MemoryLedger), since PJRT buffers, not storages, hold the memory.
#pragma once

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Storage.h>

#include "graph/node.h"

namespace torch_pjrt::device {

// The slot behind a "tpu" storage's DataPtr (its own, or a copy-on-write one over it), or behind
// a non-owning DataPtr at a live storage's data pointer; raises RuntimeError for any other pointer
// (one into a storage: see storage_at).
const graph::SlotPtr& slot_of(const c10::DataPtr& ptr);

// Whether slot_of takes `ptr`: false for a pointer into a storage past its start, as an
// UntypedStorage slice's is.
bool starts_storage(const c10::DataPtr& ptr);

// The live storage whose bytes hold `address` (or end at it): its address, its slot and the byte
// offset of `address` in it. Raises RuntimeError when there is none.
struct StorageAt {
  void* address;
  graph::SlotPtr slot;
  int64_t offset;
};
StorageAt storage_at(const void* address);

// The device of the live storage that holds `address` (Allocator::getDeviceFromPtr).
int device_of(const void* address);

// The slot a write to `storage` may rebind: a copy-on-write storage first gets a slot of its own
// (c10's materialization, on the storage's device), holding the same value, so the storages it
// shared a slot with keep theirs.
const graph::SlotPtr& writable_slot(const c10::Storage& storage);

// A copy-on-write clone of `storage` (torch._lazy_clone): both then hold c10's COW DataPtr over
// one slot, so `torch._C._is_cow_tensor` and the data pointers answer as on the CPU; a write to
// either materializes it (writable_slot). Nothing is copied on the device either way: a slot's
// value is immutable and writes rebind it.
c10::intrusive_ptr<c10::StorageImpl> lazy_clone_storage(c10::StorageImpl& storage);

class Allocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override;
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  // Storage-level copy: the destination slot shares the source's (immutable) value.
  void copy_data(void* dest, const void* src, size_t count) const override;

  bool initialized() override { return true; }
  // Drops the runtime's cached device buffers (uploaded scalar packs).
  void emptyCache(c10::MempoolId_t) override;
  // PJRT keeps a buffer alive until the work using it finished: nothing to record.
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override;
  void resetAccumulatedStats(c10::DeviceIndex device) override;
  void resetPeakStats(c10::DeviceIndex device) override;
  // (free, total) bytes; see runtime::device_memory_info. Not marked override: torch versions
  // before DeviceAllocator::getMemoryInfo existed still compile it.
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device);
};

Allocator& allocator();

// Resizes a "tpu" storage to `nbytes`, keeping the values of the leading bytes; new bytes read as
// 0. True when that recorded a copy of old contents, which the caller's op boundary runs (nothing
// is recorded for an empty storage: a fresh factory result or out=).
bool resize_storage(const c10::Storage& storage, size_t nbytes);

}  // namespace torch_pjrt::device

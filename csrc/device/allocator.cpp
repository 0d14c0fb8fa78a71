// Storage allocation for "tpu": every storage gets a Slot; device memory is owned by PJRT buffers.
#include "device/allocator.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/COW.h>
#include <c10/core/impl/COWDeleter.h>

#include <map>
#include <mutex>

#include "device/runtime_state.h"
#include "graph/graph.h"
#include "lowering/creation.h"
#include "lowering/views.h"

namespace torch_pjrt::device {
namespace {

// What a storage's DataPtr context owns: its slot, and the address its data pointer holds.
struct Handle {
  graph::SlotPtr slot;
  uintptr_t address;
};

// Each storage's data pointer is a device address of its own, never dereferenced: the start of a
// range of its byte size, apart from every other live storage's (and from its end), so pointers
// into a storage (an UntypedStorage slice's) name the storage and a byte offset into it.
constexpr uintptr_t kFirstAddress = uintptr_t{1} << 44;
constexpr uintptr_t kAlignment = 256;

// Live storages by address, for DataPtrs that PyTorch makes over or into a storage's data without
// owning it (at::from_blob, as the legacy torch.save format does to copy a storage to the host;
// UntypedStorage slices), and for copy-on-write DataPtrs, whose context is not ours.
std::mutex live_mutex;
uintptr_t next_address = kFirstAddress;
std::map<uintptr_t, Handle*>& live_slots() {
  static auto* live = new std::map<uintptr_t, Handle*>();
  return *live;
}

void delete_slot(void* ctx) {
  auto* handle = static_cast<Handle*>(ctx);
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    live_slots().erase(handle->address);
  }
  delete handle;
}

// The deleter of a DataPtr whose context is its own address, as c10's copy-on-write storages need
// (a COW storage's own DataPtr again once its other references are gone): the live map holds the
// handle.
void delete_slot_at(void* address) {
  Handle* handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    auto it = live_slots().find(reinterpret_cast<uintptr_t>(address));
    if (it == live_slots().end()) return;
    handle = it->second;
    live_slots().erase(it);
  }
  delete handle;
}

// The live storage whose range holds `address` (its end included), or null. Under live_mutex.
Handle* containing(const void* address) {
  const auto a = reinterpret_cast<uintptr_t>(address);
  auto it = live_slots().upper_bound(a);
  if (it == live_slots().begin()) return nullptr;
  Handle* handle = std::prev(it)->second;
  return a - handle->address <= static_cast<uintptr_t>(handle->slot->nbytes) ? handle : nullptr;
}

}  // namespace

const graph::SlotPtr& slot_of(const c10::DataPtr& ptr) {
  if (ptr.get_deleter() == &delete_slot) return static_cast<Handle*>(ptr.get_context())->slot;
  std::lock_guard<std::mutex> lock(live_mutex);
  auto it = live_slots().find(reinterpret_cast<uintptr_t>(ptr.get()));
  TORCH_CHECK(it != live_slots().end(),
              "tpu: this storage's data pointer is not the start of a live tpu storage");
  return it->second->slot;
}

bool starts_storage(const c10::DataPtr& ptr) {
  if (ptr.get_deleter() == &delete_slot) return true;
  std::lock_guard<std::mutex> lock(live_mutex);
  return live_slots().count(reinterpret_cast<uintptr_t>(ptr.get())) != 0;
}

StorageAt storage_at(const void* address) {
  std::lock_guard<std::mutex> lock(live_mutex);
  const Handle* handle = containing(address);
  TORCH_CHECK(handle != nullptr, "tpu: a storage's data pointer is in no live tpu storage");
  return {reinterpret_cast<void*>(handle->address), handle->slot,
          static_cast<int64_t>(reinterpret_cast<uintptr_t>(address) - handle->address)};
}

const graph::SlotPtr& writable_slot(const c10::Storage& storage) {
  if (c10::impl::cow::is_cow_data_ptr(storage.data_ptr())) {
    // c10 materializes through Allocator::clone, which allocates on the current device.
    c10::DeviceGuard guard(storage.device());
    storage.mutable_data_ptr();
  }
  return slot_of(storage.data_ptr());
}

c10::intrusive_ptr<c10::StorageImpl> lazy_clone_storage(c10::StorageImpl& storage) {
  const c10::DataPtr& own = storage.data_ptr();
  const c10::Device device = own.device();
  void* data = const_cast<void*>(own.get());  // never dereferenced: the storage's address
  c10::impl::cow::COWDeleterContext* cow = nullptr;
  if (own.get_deleter() == &delete_slot || own.get_deleter() == &delete_slot_at) {
    // c10's lazy_clone_storage takes only DataPtrs whose context is their data (ours owns a
    // handle), so the storage's DataPtr becomes copy-on-write here, as c10 would make it, over
    // its address with delete_slot_at; the live map keeps the handle.
    c10::DataPtr mine = storage.set_data_ptr(c10::DataPtr());
    mine.release_context();
    cow = new c10::impl::cow::COWDeleterContext(
        std::unique_ptr<void, c10::DeleterFnPtr>(data, &delete_slot_at));
    storage.set_data_ptr_noswap(c10::DataPtr(data, cow, &c10::impl::cow::cow_deleter, device));
    storage.set_materializer(&c10::impl::cow::materialize_cow);  // at its next mutable access
  } else {
    TORCH_CHECK(c10::impl::cow::is_cow_data_ptr(own),
                "_lazy_clone: this tpu storage's data pointer is not one of its own");
    cow = own.cast_context<c10::impl::cow::COWDeleterContext>(&c10::impl::cow::cow_deleter);
  }
  cow->increment_refcount();
  auto clone = c10::make_storage_impl(c10::StorageImpl::use_byte_size_t(), storage.sym_nbytes(),
                                      c10::DataPtr(data, cow, &c10::impl::cow::cow_deleter, device),
                                      storage.allocator(), storage.resizable(), device);
  clone->set_materializer(&c10::impl::cow::materialize_cow);
  return clone;
}

c10::DataPtr Allocator::allocate(size_t nbytes) {
  const int index = current_device();
  check_device_index(index);
  auto* handle = new Handle{std::make_shared<graph::Slot>(), 0};
  handle->slot->device = index;
  handle->slot->nbytes = static_cast<int64_t>(nbytes);
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    handle->address = next_address;
    // One byte past the end too, so a pointer to a storage's end is not the next one's start.
    next_address += (nbytes + kAlignment) / kAlignment * kAlignment;
    live_slots().emplace(handle->address, handle);
  }
  return {reinterpret_cast<void*>(handle->address), handle, &delete_slot,
          c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index))};
}

void Allocator::copy_data(void* dest, const void* src, size_t count) const {
  graph::SlotPtr to, from;
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    const Handle* d = containing(dest);
    const Handle* s = containing(src);
    TORCH_CHECK(d != nullptr && s != nullptr, "tpu: a storage copy between unknown addresses");
    to = d->slot;
    from = s->slot;
    TORCH_CHECK(reinterpret_cast<uintptr_t>(dest) == d->address &&
                    reinterpret_cast<uintptr_t>(src) == s->address,
                "tpu: partial storage copies are not supported");
  }
  TORCH_CHECK(
      static_cast<int64_t>(count) == from->nbytes && count == static_cast<size_t>(to->nbytes),
      "tpu: partial storage copies are not supported");
  TORCH_CHECK(to->device == from->device, "tpu: a storage of tpu:", from->device,
              " cannot be copied into one of tpu:", to->device);
  to->data = from->data;
}

int device_of(const void* address) {
  std::lock_guard<std::mutex> lock(live_mutex);
  const Handle* handle = containing(address);
  TORCH_CHECK(handle != nullptr, "tpu: ", address, " is in no live tpu storage");
  return handle->slot->device;
}

namespace {

void copy_stat(const runtime::Stat& from, c10::CachingAllocator::StatArray& to) {
  auto& s = to[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
  s.current = from.current;
  s.peak = from.peak;
  s.allocated = from.allocated;
  s.freed = from.freed;
}

runtime::MemoryLedger& ledger(c10::DeviceIndex device) {
  check_device_index(device);
  return client().memory();
}

}  // namespace

// PyTorch's caching-allocator statistics in PJRT terms: an allocation is a value buffer (it backs
// a tensor or a value in flight), a segment is any device buffer we hold (value buffers and the
// runtime's cached ones), so reserved = allocated + cached. Only the "all" pool is filled; PJRT
// has no small and large pools. Blocks are never split, so active equals allocated. num_ooms counts
// the plugin's out-of-memory failures; there are no retries (num_alloc_retries stays 0).
c10::CachingDeviceAllocator::DeviceStats Allocator::getDeviceStats(c10::DeviceIndex device) {
  const runtime::DeviceMemory m = ledger(device).get(device);
  c10::CachingDeviceAllocator::DeviceStats stats;
  copy_stat(m.buffers, stats.allocation);
  copy_stat(m.buffers, stats.active);
  copy_stat(m.bytes, stats.allocated_bytes);
  copy_stat(m.bytes, stats.active_bytes);
  copy_stat(m.requested_bytes, stats.requested_bytes);
  copy_stat(m.all_buffers, stats.segment);
  copy_stat(m.all_bytes, stats.reserved_bytes);
  stats.num_device_alloc = m.all_buffers.allocated;
  stats.num_device_free = m.all_buffers.freed;
  stats.num_ooms = m.ooms;
  return stats;
}

void Allocator::resetAccumulatedStats(c10::DeviceIndex device) {
  ledger(device).reset_accumulated(device);
}

void Allocator::resetPeakStats(c10::DeviceIndex device) { ledger(device).reset_peaks(device); }

void Allocator::emptyCache(c10::MempoolId_t) { graph::release_caches(); }

std::pair<size_t, size_t> Allocator::getMemoryInfo(c10::DeviceIndex device) {
  check_device_index(device);
  const auto [free, total] = runtime::device_memory_info(client(), device);
  return {static_cast<size_t>(free), static_cast<size_t>(total)};
}

bool resize_storage(const c10::Storage& storage, size_t nbytes) {
  const graph::SlotPtr old = slot_of(storage.data_ptr());
  c10::DeviceGuard guard(storage.device());
  c10::DataPtr fresh = allocator().allocate(nbytes);
  const graph::SlotPtr& slot = slot_of(fresh);
  const bool copies = old->data && nbytes > 0 && old->nbytes > 0;
  if (copies) {
    // Keep the common prefix; the rest stays uninitialized (zeros). As bytes when the new size is
    // no multiple of the old contents' element size.
    graph::DataPtr contents = old->data;
    hlo::ElementType type = contents->type.dtype;
    if (static_cast<int64_t>(nbytes) % static_cast<int64_t>(runtime::element_size(type)) != 0) {
      type = hlo::ElementType::U8;
      contents = graph::record1(lowering::kBitcast, {contents}, {},
                                hlo::TensorType{type, {old->nbytes}}, old->device);
    }
    const int64_t itemsize = static_cast<int64_t>(runtime::element_size(type));
    const int64_t keep = std::min<int64_t>(old->nbytes, nbytes) / itemsize;
    const int64_t total = static_cast<int64_t>(nbytes) / itemsize;
    graph::DataPtr prefix =
        graph::record1(lowering::kViewRead, {contents}, lowering::view_attrs({keep}, {1}, 0),
                       hlo::TensorType{type, {keep}}, old->device);
    graph::Attrs zero;
    zero.floats = {0.0};
    graph::DataPtr base =
        graph::record1(lowering::kFill, {}, zero, hlo::TensorType{type, {total}}, old->device);
    graph::bind_slot(slot, graph::record1(lowering::kViewWrite, {base, prefix},
                                          lowering::view_attrs({keep}, {1}, 0),
                                          hlo::TensorType{type, {total}}, old->device));
  }
  storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
  storage.unsafeGetStorageImpl()->set_nbytes(nbytes);
  return copies;
}

Allocator& allocator() {
  static Allocator a;
  return a;
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &allocator());

}  // namespace torch_pjrt::device

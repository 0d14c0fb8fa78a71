// Storage allocation for "tpu": every storage gets a Slot; device memory is owned by PJRT buffers.
#include "device/allocator.h"

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/COW.h>
#include <c10/core/impl/COWDeleter.h>

#include <mutex>
#include <unordered_map>

#include "device/runtime_state.h"
#include "graph/graph.h"
#include "lowering/creation.h"
#include "lowering/views.h"

namespace torch_pjrt::device {
namespace {

// Live slots by address, for DataPtrs that PyTorch makes over a storage's data pointer without
// owning it (at::from_blob, as the legacy torch.save format does to copy a storage to the host).
std::mutex live_mutex;
std::unordered_map<const void*, graph::SlotPtr*>& live_slots() {
  static auto* live = new std::unordered_map<const void*, graph::SlotPtr*>();
  return *live;
}

void delete_slot(void* ctx) {
  auto* handle = static_cast<graph::SlotPtr*>(ctx);
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    live_slots().erase(handle->get());
  }
  delete handle;
}

// The deleter of a DataPtr whose context is its slot's address, as c10's copy-on-write storages
// need (a COW storage's own DataPtr again once its other references are gone): the live map holds
// the slot's handle.
void delete_slot_at(void* slot) {
  graph::SlotPtr* handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    auto it = live_slots().find(slot);
    if (it == live_slots().end()) return;
    handle = it->second;
    live_slots().erase(it);
  }
  delete handle;
}

}  // namespace

const graph::SlotPtr& slot_of(const c10::DataPtr& ptr) {
  if (ptr.get_deleter() == &delete_slot) return *static_cast<graph::SlotPtr*>(ptr.get_context());
  std::lock_guard<std::mutex> lock(live_mutex);
  auto it = live_slots().find(ptr.get());
  TORCH_CHECK(it != live_slots().end(),
              "tpu: this storage's data pointer is not the start of a live tpu storage (a slice of "
              "an UntypedStorage at a nonzero offset?); such storages are not supported");
  return *it->second;
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
  void* data = const_cast<void*>(own.get());  // never dereferenced: a slot address
  c10::impl::cow::COWDeleterContext* cow = nullptr;
  if (own.get_deleter() == &delete_slot || own.get_deleter() == &delete_slot_at) {
    // c10's lazy_clone_storage takes only DataPtrs whose context is their data (ours owns a
    // handle), so the storage's DataPtr becomes copy-on-write here, as c10 would make it, over
    // the slot's address with delete_slot_at; the live map keeps the handle.
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
  auto* handle = new graph::SlotPtr(std::make_shared<graph::Slot>());
  (*handle)->device = index;
  (*handle)->nbytes = static_cast<int64_t>(nbytes);
  {
    std::lock_guard<std::mutex> lock(live_mutex);
    live_slots().emplace(handle->get(), handle);
  }
  return {handle->get(), handle, &delete_slot,
          c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index))};
}

void Allocator::copy_data(void* dest, const void* src, size_t count) const {
  auto* to = static_cast<graph::Slot*>(dest);
  const auto* from = static_cast<const graph::Slot*>(src);
  TORCH_CHECK(
      static_cast<int64_t>(count) == from->nbytes && count == static_cast<size_t>(to->nbytes),
      "tpu: partial storage copies are not supported");
  TORCH_CHECK(to->device == from->device, "tpu: a storage of tpu:", from->device,
              " cannot be copied into one of tpu:", to->device);
  to->data = from->data;
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

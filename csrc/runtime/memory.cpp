// MemoryLedger bookkeeping and the plugin's PJRT_Device_MemoryStats.
#include "memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <new>
#include <stdexcept>

#include "client.h"
#include "error.h"

namespace torch_pjrt::runtime {

void Stat::add(int64_t n) {
  current += n;
  allocated += n;
  peak = std::max(peak, current);
}

void Stat::remove(int64_t n) {
  current -= n;
  freed += n;
}

DeviceMemory& MemoryLedger::at(int device) {
  check_index(device);
  return devices_[device];
}

void MemoryLedger::check_index(int device) const {
  if (device < 0 || device >= static_cast<int>(devices_.size())) {
    throw std::out_of_range("memory statistics: device index " + std::to_string(device) +
                            " out of range: the client has " + std::to_string(devices_.size()) +
                            " devices");
  }
}

void MemoryLedger::add(int device, int64_t bytes, int64_t requested) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceMemory& d = at(device);
  d.buffers.add(1);
  d.bytes.add(bytes);
  d.requested_bytes.add(requested);
  d.all_buffers.add(1);
  d.all_bytes.add(bytes);
}

void MemoryLedger::remove(int device, int64_t bytes, int64_t requested, bool cache) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceMemory& d = at(device);
  if (!cache) {
    d.buffers.remove(1);
    d.bytes.remove(bytes);
    d.requested_bytes.remove(requested);
  }
  d.all_buffers.remove(1);
  d.all_bytes.remove(bytes);
}

void MemoryLedger::move_to_cache(int device, int64_t bytes, int64_t requested) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceMemory& d = at(device);
  d.buffers.remove(1);
  d.bytes.remove(bytes);
  d.requested_bytes.remove(requested);
}

DeviceMemory MemoryLedger::get(int device) const {
  std::lock_guard<std::mutex> lock(mutex_);
  check_index(device);
  return devices_[device];
}

void MemoryLedger::reset_peaks(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceMemory& d = at(device);
  for (Stat* s : {&d.buffers, &d.bytes, &d.requested_bytes, &d.all_buffers, &d.all_bytes}) {
    s->peak = s->current;
  }
}

void MemoryLedger::reset_accumulated(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceMemory& d = at(device);
  for (Stat* s : {&d.buffers, &d.bytes, &d.requested_bytes, &d.all_buffers, &d.all_bytes}) {
    s->allocated = 0;
    s->freed = 0;
  }
  d.ooms = 0;
}

void MemoryLedger::out_of_memory(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  at(device).ooms += 1;
}

namespace {

// Plugins built with PJRT C API 0.115/0.116 expect a 201-byte PJRT_Device_MemoryStats_Args (the
// 0.81 header's is 185) and reject smaller ones. A zeroed, larger struct is valid for every
// plugin: each writes only the fields it knows.
constexpr size_t kMemoryStatsStructSize =
    std::max<size_t>(PJRT_Device_MemoryStats_Args_STRUCT_SIZE, 201);

// The host's available memory: MemAvailable (what can be allocated without swapping), or free
// pages where the kernel does not report it.
int64_t host_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return static_cast<int64_t>(sysconf(_SC_AVPHYS_PAGES)) * sysconf(_SC_PAGESIZE);
}

}  // namespace

std::optional<std::map<std::string, int64_t>> plugin_memory_stats(const Client& client,
                                                                  int device) {
  PJRT_Device* target = client.device(device);
  const PJRT_Api* api = client.api();
  alignas(PJRT_Device_MemoryStats_Args) unsigned char storage[256] = {};
  static_assert(sizeof(storage) >= kMemoryStatsStructSize);
  static_assert(sizeof(storage) >= sizeof(PJRT_Device_MemoryStats_Args));
  auto* args = new (storage) PJRT_Device_MemoryStats_Args{};
  args->struct_size = kMemoryStatsStructSize;
  args->device = target;
  try {
    check(api, api->PJRT_Device_MemoryStats(args), "PJRT_Device_MemoryStats");
  } catch (const PjrtError& e) {
    if (e.code() == PJRT_Error_Code_UNIMPLEMENTED) return std::nullopt;
    throw;
  }
  std::map<std::string, int64_t> stats{{"bytes_in_use", args->bytes_in_use}};
  auto put = [&stats](const char* name, int64_t value, bool is_set) {
    if (is_set) stats[name] = value;
  };
  put("peak_bytes_in_use", args->peak_bytes_in_use, args->peak_bytes_in_use_is_set);
  put("num_allocs", args->num_allocs, args->num_allocs_is_set);
  put("largest_alloc_size", args->largest_alloc_size, args->largest_alloc_size_is_set);
  put("bytes_limit", args->bytes_limit, args->bytes_limit_is_set);
  put("bytes_reserved", args->bytes_reserved, args->bytes_reserved_is_set);
  put("peak_bytes_reserved", args->peak_bytes_reserved, args->peak_bytes_reserved_is_set);
  put("bytes_reservable_limit", args->bytes_reservable_limit, args->bytes_reservable_limit_is_set);
  put("largest_free_block_bytes", args->largest_free_block_bytes,
      args->largest_free_block_bytes_is_set);
  put("pool_bytes", args->pool_bytes, args->pool_bytes_is_set);
  put("peak_pool_bytes", args->peak_pool_bytes, args->peak_pool_bytes_is_set);
  return stats;
}

std::pair<int64_t, int64_t> device_memory_info(const Client& client, int device) {
  const auto stats = plugin_memory_stats(client, device);
  if (stats && stats->count("bytes_limit")) {
    const int64_t total = stats->at("bytes_limit");
    return {std::max<int64_t>(0, total - stats->at("bytes_in_use")), total};
  }
  if (client.platform_name() == "cpu") {
    const int64_t total = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
    return {host_available_bytes(), total};
  }
  throw std::runtime_error("mem_get_info: the " + client.platform_name() +
                           " PJRT plugin does not report device memory (no bytes_limit in "
                           "PJRT_Device_MemoryStats)");
}

}  // namespace torch_pjrt::runtime

// Device memory figures: a client's accounting of the bytes its live buffers hold on each device
// (MemoryLedger, fed by Buffer), and the plugin's own statistics for a device where it reports
// them.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace torch_pjrt::runtime {

class Client;

// One statistic in the shape PyTorch's allocators report: current value, its peak since the last
// reset_peaks, and the totals added and removed since the last reset_accumulated.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;

  void add(int64_t n);
  void remove(int64_t n);
};

// Per device. A buffer is either a value buffer (it backs a tensor or a value in flight) or a cache
// buffer (kept by a runtime cache, such as uploaded host-scalar packs, and dropped by emptying it).
struct DeviceMemory {
  Stat buffers;          // number of value buffers
  Stat bytes;            // their on-device size (PJRT_Buffer_OnDeviceSizeInBytes)
  Stat requested_bytes;  // their logical size (elements x element size)
  Stat all_buffers;      // value and cache buffers: every device allocation we hold
  Stat all_bytes;        // their on-device size
  int64_t ooms = 0;      // plugin calls that failed for lack of device memory
};

class MemoryLedger {
 public:
  explicit MemoryLedger(int devices) : devices_(devices) {}

  // A buffer of `bytes` on-device bytes and `requested` logical bytes came into existence.
  void add(int device, int64_t bytes, int64_t requested);
  // A buffer went away (destroyed, or donated to a computation); `cache` says which kind it was.
  void remove(int device, int64_t bytes, int64_t requested, bool cache);
  // A value buffer became a cache buffer.
  void move_to_cache(int device, int64_t bytes, int64_t requested);
  // A plugin call that allocates on `device` failed with RESOURCE_EXHAUSTED.
  void out_of_memory(int device);

  // Throws std::out_of_range for a device index outside the client's devices.
  DeviceMemory get(int device) const;
  void reset_peaks(int device);
  void reset_accumulated(int device);

 private:
  DeviceMemory& at(int device);
  void check_index(int device) const;
  mutable std::mutex mutex_;
  std::vector<DeviceMemory> devices_;
};

// PJRT_Device_MemoryStats of one device: the statistics the plugin set, by their PJRT names
// (bytes_in_use, peak_bytes_in_use, num_allocs, largest_alloc_size, bytes_limit, bytes_reserved,
// peak_bytes_reserved, bytes_reservable_limit, largest_free_block_bytes, pool_bytes,
// peak_pool_bytes). nullopt when the plugin does not implement the call (the XLA CPU plugin).
// Throws std::out_of_range for a bad index, PjrtError for any other plugin error.
std::optional<std::map<std::string, int64_t>> plugin_memory_stats(const Client& client, int device);

// (free, total) bytes of a device's memory: from the plugin's bytes_limit and bytes_in_use where it
// reports them; for the CPU plugin, whose device memory is the host's, the host's available and
// physical memory (/proc/meminfo MemAvailable, sysconf). Throws std::runtime_error when neither
// applies.
std::pair<int64_t, int64_t> device_memory_info(const Client& client, int device);

}  // namespace torch_pjrt::runtime

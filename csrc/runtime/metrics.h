// Process-wide counters read by torch_pjrt.metrics; every layer bumps the ones it owns.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace torch_pjrt::runtime {

struct Counters {
  std::atomic<int64_t> compiles{0};
  std::atomic<int64_t> cache_hits{0};
  std::atomic<int64_t> disk_hits{0};          // eager programs loaded from the disk cache
  std::atomic<int64_t> program_evictions{0};  // executables the eager cache let go
  std::atomic<int64_t> executions{0};
  std::atomic<int64_t> output_buffers{0};  // buffers the executions produced
  std::atomic<int64_t> host_to_device_bytes{0};
  std::atomic<int64_t> device_to_host_bytes{0};
  std::atomic<int64_t> compile_nanoseconds{0};
  // Device-to-host reads that ops make (indices, masks, fallback operands), not the user's own
  // copies to the host; and reads of device-side check results (graph/checks.h).
  std::atomic<int64_t> host_round_trips{0};
  std::atomic<int64_t> check_reads{0};
  std::atomic<int64_t> check_read_bytes{0};  // also in device_to_host_bytes

  // Operator name -> number of times it ran through the CPU fallback.
  void count_fallback(const std::string& op);
  std::map<std::string, int64_t> fallbacks() const;
  void reset();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, int64_t> fallbacks_;
};

Counters& counters();

}  // namespace torch_pjrt::runtime

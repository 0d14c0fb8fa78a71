// The process-wide Counters instance and its fallback map.
#include "metrics.h"

namespace torch_pjrt::runtime {

void Counters::count_fallback(const std::string& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++fallbacks_[op];
}

std::map<std::string, int64_t> Counters::fallbacks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fallbacks_;
}

void Counters::reset() {
  compiles = 0;
  cache_hits = 0;
  disk_hits = 0;
  program_evictions = 0;
  executions = 0;
  output_buffers = 0;
  host_to_device_bytes = 0;
  device_to_host_bytes = 0;
  compile_nanoseconds = 0;
  host_round_trips = 0;
  check_reads = 0;
  check_read_bytes = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  fallbacks_.clear();
}

Counters& counters() {
  static Counters instance;
  return instance;
}

}  // namespace torch_pjrt::runtime

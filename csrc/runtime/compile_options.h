// The options sent with every compilation, serialized as the xla.CompileOptionsProto PJRT expects:
// one replica, one partition, a portable executable (or, for collective programs, one replica per
// device of a device assignment), plus overrides of XLA's debug options by name and the
// optimization / memory-fitting effort levels.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace torch_pjrt::runtime {

struct CompileOptions {
  using Value = std::variant<bool, int64_t, double, std::string>;
  // XLA DebugOptions fields by name, e.g. {"xla_allow_excess_precision", false}. A plugin rejects
  // names it does not know when compiling.
  std::map<std::string, Value> overrides;
  // xla.ExecutionOptions.EffortLevel: 0 (the plugin's default), or 9/19/29/39 for O0..O3.
  int optimization_level = 0;
  int memory_fitting_level = 0;
  // Empty: one replica, compiled portable (runs on any device). Otherwise the global device id
  // (PJRT_DeviceDescription_Id) of each replica, in replica order: num_replicas = its size, and the
  // executable is compiled non-portable with this device assignment (collective programs).
  std::vector<int64_t> replica_devices;

  // The CompileOptionsProto bytes (deterministic: equal options give equal bytes, so they can be
  // part of a cache key).
  std::string serialize() const;
};

// The EffortLevel value of "O0".."O3"; throws std::invalid_argument naming the accepted values.
int effort_level(const std::string& name);

}  // namespace torch_pjrt::runtime

// The table of grown argument structs and the parser of plugins' struct-size errors.
#include "struct_sizes.h"

#include <algorithm>
#include <cstdlib>

namespace torch_pjrt::runtime {

namespace {

// Sizes at PJRT C API 0.114 (x86-64), the newest layout published with sizes: ExecuteOptions
// gained multi_slice_config, use_major_to_minor_data_layout_for_callbacks and the HLO output
// callbacks; DeserializeAndLoad gained load_options; the memory-stats structs gained more counters.
constexpr GrownStructInfo kTable[kGrownStructCount] = {
    {"PJRT_ExecuteOptions", PJRT_ExecuteOptions_STRUCT_SIZE, 144, 114},
    {"PJRT_Executable_DeserializeAndLoad_Args", PJRT_Executable_DeserializeAndLoad_Args_STRUCT_SIZE,
     72, 114},
    {"PJRT_Executable_GetCompiledMemoryStats_Args",
     PJRT_Executable_GetCompiledMemoryStats_Args_STRUCT_SIZE, 144, 114},
    {"PJRT_Device_MemoryStats_Args", PJRT_Device_MemoryStats_Args_STRUCT_SIZE, 201, 114},
};

}  // namespace

const GrownStructInfo& grown_struct_info(GrownStruct s) { return kTable[static_cast<int>(s)]; }

size_t initial_struct_size(GrownStruct s, int plugin_minor) {
  const GrownStructInfo& info = grown_struct_info(s);
  if (plugin_minor <= PJRT_API_MINOR) return info.header_size;
  return std::max(info.header_size, info.known_size);
}

std::optional<SizeRejection> parse_size_rejection(const std::string& message) {
  // "Unexpected <name> size: expected <N>, got <M>." (xla/pjrt/c/pjrt_c_api_helpers.cc)
  static const std::string kPrefix = "Unexpected ";
  static const std::string kMiddle = " size: expected ";
  const size_t start = message.find(kPrefix);
  if (start == std::string::npos) return std::nullopt;
  const size_t name_start = start + kPrefix.size();
  const size_t middle = message.find(kMiddle, name_start);
  if (middle == std::string::npos || middle == name_start) return std::nullopt;
  const char* digits = message.c_str() + middle + kMiddle.size();
  char* end = nullptr;
  const unsigned long long expected = std::strtoull(digits, &end, 10);
  if (end == digits) return std::nullopt;
  return SizeRejection{message.substr(name_start, middle - name_start),
                       static_cast<size_t>(expected)};
}

}  // namespace torch_pjrt::runtime

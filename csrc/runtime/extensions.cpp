// Walking the extension chain and naming extension types.
#include "extensions.h"

#include <cstring>

namespace torch_pjrt::runtime {

std::vector<Extension> walk_extensions(const PJRT_Extension_Base* first) {
  std::vector<Extension> out;
  for (const PJRT_Extension_Base* ext = first; ext != nullptr && out.size() < kMaxExtensions;
       ext = ext->next) {
    // A newer plugin's types lie past our header's enumerators, outside the enum's range (reading
    // them as the enum is undefined; UBSan reports it): read the field as the int it is.
    static_assert(sizeof(ext->type) == sizeof(int));
    int type = 0;
    std::memcpy(&type, &ext->type, sizeof type);
    out.push_back({type, ext->struct_size, ext});
  }
  return out;
}

std::string extension_name(int type) {
  // PJRT_Extension_Type values up to PJRT C API 0.114; 0-15 are in our 0.81 header.
  static const char* const kNames[] = {
      "Gpu_Custom_Call",
      "Profiler",
      "Custom_Partitioner",
      "Stream",
      "Layouts",
      "FFI",
      "MemoryDescriptions",
      "Triton",
      "RawBuffer",
      "PhaseCompile",
      "Example",
      "Unknown",
      "CrossHostTransfers",
      "ExecutableMetadata",
      "Callback",
      "HostAllocator",
      "TpuTopology",
      "TpuExecutable",
      "Megascale",
      "Shardings",
      "AbiVersion",
      "Collectives",
      "MultiSlice",
      "HostMemoryAllocator",
      "XlaTransform",
  };
  constexpr int kCount = static_cast<int>(sizeof(kNames) / sizeof(kNames[0]));
  if (type >= 0 && type < kCount) return kNames[type];
  return "type " + std::to_string(type);
}

}  // namespace torch_pjrt::runtime

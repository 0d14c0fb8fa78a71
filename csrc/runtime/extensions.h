// The plugin's extension chain (PJRT_Api.extension_start): which optional extensions it offers.
#pragma once

#include <pjrt_c_api.h>

#include <cstddef>
#include <string>
#include <vector>

namespace torch_pjrt::runtime {

struct Extension {
  int type;  // PJRT_Extension_Type value; plugins newer than our header use values it lacks
  size_t struct_size;
  const PJRT_Extension_Base* base;
};

// Walks the chain starting at `first`. Stops after kMaxExtensions links, so a malformed (cyclic)
// chain cannot hang the process.
std::vector<Extension> walk_extensions(const PJRT_Extension_Base* first);
constexpr size_t kMaxExtensions = 64;

// The name of an extension type (e.g. "Profiler", "Layouts"), or "type <n>" for unknown ones.
std::string extension_name(int type);

}  // namespace torch_pjrt::runtime

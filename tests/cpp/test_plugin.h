// The PJRT plugin the C++ tests run on: TORCH_PJRT_TEST_PLUGIN (a path) when set, so the suites
// run on any plugin (scripts/test.sh runs them on both CPU plugins), else the build's default.
#pragma once

#include <cstdlib>
#include <string>

namespace torch_pjrt {

inline std::string test_plugin_path() {
  const char* env = std::getenv("TORCH_PJRT_TEST_PLUGIN");
  return env != nullptr && *env != '\0' ? env : TORCH_PJRT_DEFAULT_TEST_PLUGIN;
}

}  // namespace torch_pjrt

// Shared helpers of the runtime tests added with memory accounting and the timeline: a CPU-plugin
// client and small programs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/client.h"
#include "runtime/executable.h"
#include "test_plugin.h"

namespace torch_pjrt::runtime::testing {

// out = a + b on f32[n]; with `donate`, `a` is donated to the output.
inline std::string add_program(int64_t n, bool donate) {
  const std::string t = "tensor<" + std::to_string(n) + "xf32>";
  return "module {\n  func.func public @main(%a: " + t +
         (donate ? " {tf.aliasing_output = 0 : i32}" : "") + ", %b: " + t + ") -> " + t +
         " {\n    %0 = stablehlo.add %a, %b : " + t + "\n    return %0 : " + t + "\n  }\n}\n";
}

inline std::shared_ptr<Client> cpu_client(int64_t devices = 2) {
  return Client::create(Plugin::load(test_plugin_path()), {{"cpu_device_count", devices}});
}

inline std::shared_ptr<Buffer> upload(Client& client, int64_t n, int device = 0) {
  const std::vector<float> values(n, 1.0f);
  return client.buffer_from_host(values.data(), ElementType::F32, {n}, device);
}

}  // namespace torch_pjrt::runtime::testing

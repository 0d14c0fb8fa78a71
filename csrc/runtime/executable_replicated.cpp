// Executable: launching a program compiled with a device assignment (one replica per device, e.g.
// a collective program) on the devices of the assignment that this process owns.
#include <stdexcept>
#include <string>

#include "client.h"
#include "error.h"
#include "executable.h"

namespace torch_pjrt::runtime {

std::vector<int> Executable::addressable_devices() const {
  const PJRT_Api* api = client_->api();
  PJRT_LoadedExecutable_AddressableDevices_Args query{};
  query.struct_size = PJRT_LoadedExecutable_AddressableDevices_Args_STRUCT_SIZE;
  query.executable = executable_;
  check(api, api->PJRT_LoadedExecutable_AddressableDevices(&query),
        "PJRT_LoadedExecutable_AddressableDevices");
  std::vector<int> devices;
  for (size_t i = 0; i < query.num_addressable_devices; ++i) {
    const int index = client_->device_index(query.addressable_devices[i]);
    if (index < 0) {
      throw std::runtime_error("executable runs on a device its client does not list");
    }
    devices.push_back(index);
  }
  return devices;
}

std::vector<std::vector<std::shared_ptr<Buffer>>> Executable::execute_replicated(
    const std::vector<std::vector<const Buffer*>>& args,
    std::vector<CompletionPtr>* completions) const {
  const std::vector<int> devices = addressable_devices();
  if (args.size() != devices.size()) {
    throw std::invalid_argument("execute_replicated: " + std::to_string(args.size()) +
                                " argument lists for a program on " +
                                std::to_string(devices.size()) + " local devices");
  }
  std::vector<std::vector<std::shared_ptr<Buffer>>> outputs(devices.size());
  launch(args.data(), devices.data(), devices.size(), nullptr, ++launches_, outputs.data(),
         completions);
  return outputs;
}

}  // namespace torch_pjrt::runtime

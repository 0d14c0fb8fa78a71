// Executable: launching a loaded PJRT executable on one device and wrapping its outputs.
#include "executable.h"

#include <stdexcept>
#include <string>

#include "buffer.h"
#include "client.h"
#include "error.h"
#include "metrics.h"
#include "timeline.h"

namespace torch_pjrt::runtime {

Executable::Executable(std::shared_ptr<const Client> client, PJRT_LoadedExecutable* executable,
                       size_t num_outputs)
    : client_(std::move(client)),
      executable_(executable),
      num_outputs_(num_outputs),
      name_(std::make_shared<const std::string>("program")) {}

void Executable::set_name(std::string name) {
  name_ = std::make_shared<const std::string>(std::move(name));
}

Executable::~Executable() {
  PJRT_LoadedExecutable_Destroy_Args args{};
  args.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
  args.executable = executable_;
  try {
    check(client_->api(), client_->api()->PJRT_LoadedExecutable_Destroy(&args),
          "PJRT_LoadedExecutable_Destroy");
  } catch (const PjrtError&) {
  }
}

void query_executable(const PJRT_Api* api, PJRT_LoadedExecutable* loaded,
                      const std::function<PJRT_Error*(PJRT_Executable*)>& query, const char* what) {
  PJRT_LoadedExecutable_GetExecutable_Args get{};
  get.struct_size = PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE;
  get.loaded_executable = loaded;
  check(api, api->PJRT_LoadedExecutable_GetExecutable(&get), "PJRT_LoadedExecutable_GetExecutable");
  PJRT_Error* error = query(get.executable);
  PJRT_Executable_Destroy_Args destroy{};
  destroy.struct_size = PJRT_Executable_Destroy_Args_STRUCT_SIZE;
  destroy.executable = get.executable;
  PJRT_Error* destroy_error = api->PJRT_Executable_Destroy(&destroy);
  check(api, error, what);
  check(api, destroy_error, "PJRT_Executable_Destroy");
}

std::string Executable::serialize() const {
  const PJRT_Api* api = client_->api();
  std::string bytes;
  query_executable(
      api, executable_,
      [&](PJRT_Executable* executable) {
        PJRT_Executable_Serialize_Args args{};
        args.struct_size = PJRT_Executable_Serialize_Args_STRUCT_SIZE;
        args.executable = executable;
        PJRT_Error* error = api->PJRT_Executable_Serialize(&args);
        if (error == nullptr) {
          bytes.assign(args.serialized_bytes, args.serialized_bytes_size);
          if (args.serialized_executable_deleter != nullptr) {
            args.serialized_executable_deleter(args.serialized_executable);
          }
        }
        return error;
      },
      "PJRT_Executable_Serialize");
  return bytes;
}

std::vector<std::shared_ptr<Buffer>> Executable::execute(const std::vector<const Buffer*>& args,
                                                         int device) const {
  PJRT_Device* target = client_->device(device);
  return launch({args}, {device}, target, 0)[0];
}

std::vector<std::vector<std::shared_ptr<Buffer>>> Executable::launch(
    const std::vector<std::vector<const Buffer*>>& args, const std::vector<int>& devices,
    PJRT_Device* execute_device, int launch_id, std::vector<CompletionPtr>* completions) const {
  std::vector<std::vector<PJRT_Buffer*>> inputs(args.size());
  for (size_t d = 0; d < args.size(); ++d) {
    for (size_t i = 0; i < args[d].size(); ++i) {
      const Buffer* arg = args[d][i];
      if (arg == nullptr) {
        throw std::invalid_argument("execute: argument " + std::to_string(i) + " is null");
      }
      if (arg->device() != devices[d]) {
        throw std::invalid_argument("execute: argument " + std::to_string(i) + " is on device " +
                                    std::to_string(arg->device()) + ", launch is on device " +
                                    std::to_string(devices[d]));
      }
      inputs[d].push_back(arg->raw());
    }
    if (inputs[d].size() != inputs[0].size()) {
      throw std::invalid_argument("execute: devices were given different numbers of arguments");
    }
  }

  const PJRT_Api* api = client_->api();
  std::vector<std::vector<PJRT_Buffer*>> outputs(args.size(),
                                                 std::vector<PJRT_Buffer*>(num_outputs_, nullptr));
  std::vector<PJRT_Buffer* const*> argument_lists;
  std::vector<PJRT_Buffer**> output_lists;
  for (size_t d = 0; d < args.size(); ++d) {
    argument_lists.push_back(inputs[d].data());
    output_lists.push_back(outputs[d].data());
  }
  std::vector<PJRT_Event*> complete(args.size(), nullptr);
  int64_t launch_ns = 0;
  client_->plugin().call_sized(
      GrownStruct::kExecuteOptions,
      [&](size_t struct_size) {
        // Sized for the plugin: newer plugins expect a larger PJRT_ExecuteOptions.
        Padded<PJRT_ExecuteOptions> options(struct_size);
        options->launch_id = launch_id;
        PJRT_LoadedExecutable_Execute_Args execute{};
        execute.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
        execute.executable = executable_;
        execute.options = options.get();
        execute.argument_lists = argument_lists.data();
        execute.num_devices = args.size();
        execute.num_args = inputs[0].size();
        execute.output_lists = output_lists.data();
        execute.execute_device = execute_device;
        execute.device_complete_events = complete.data();
        launch_ns = now_ns();
        return api->PJRT_LoadedExecutable_Execute(&execute);
      },
      "PJRT_LoadedExecutable_Execute");
  counters().executions += 1;
  counters().output_buffers += static_cast<int64_t>(num_outputs_ * args.size());
  for (size_t d = 0; d < args.size(); ++d) {
    CompletionPtr done =
        client_->timeline().launched(api, complete[d], devices[d], name_, launch_ns);
    if (completions != nullptr) completions->push_back(std::move(done));
    for (const Buffer* arg : args[d]) arg->forget_if_donated();
  }

  std::vector<std::vector<std::shared_ptr<Buffer>>> results(args.size());
  for (size_t d = 0; d < args.size(); ++d) {
    for (size_t i = 0; i < num_outputs_; ++i) {
      try {
        results[d].push_back(std::make_shared<Buffer>(client_, outputs[d][i], devices[d]));
      } catch (...) {
        // The failed Buffer destroyed outputs[d][i]; the ones not yet wrapped are still raw.
        outputs[d][i] = nullptr;
        for (size_t e = d; e < args.size(); ++e) {
          for (size_t j = (e == d ? i + 1 : 0); j < num_outputs_; ++j) {
            PJRT_Buffer_Destroy_Args destroy{};
            destroy.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
            destroy.buffer = outputs[e][j];
            api->PJRT_Buffer_Destroy(&destroy);
          }
        }
        throw;
      }
    }
  }
  return results;
}

}  // namespace torch_pjrt::runtime

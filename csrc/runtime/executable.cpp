// Executable: launching a loaded PJRT executable on one device and wrapping its outputs.
#include "executable.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "buffer.h"
#include "client.h"
#include "error.h"
#include "fault.h"
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

namespace {

// `n` value-initialized elements of T, on the stack when few (a launch's arrays usually are), so
// a launch allocates nothing but its outputs.
template <class T, size_t N = 8>
class Scratch {
 public:
  explicit Scratch(size_t n) {
    if (n > N) {
      heap_.resize(n);
      data_ = heap_.data();
    }
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  T* data() { return data_; }
  T& operator[](size_t i) { return data_[i]; }

 private:
  T local_[N] = {};
  std::vector<T> heap_;
  T* data_ = local_;
};

}  // namespace

std::vector<std::shared_ptr<Buffer>> Executable::execute(const std::vector<const Buffer*>& args,
                                                         int device,
                                                         const std::vector<int64_t>& keep) const {
  PJRT_Device* target = client_->device(device);
  std::vector<std::shared_ptr<Buffer>> outputs;
  launch(&args, &device, 1, target, 0, &outputs, nullptr, keep);
  return outputs;
}

void Executable::launch(const std::vector<const Buffer*>* args, const int* devices,
                        size_t num_devices, PJRT_Device* execute_device, int launch_id,
                        std::vector<std::shared_ptr<Buffer>>* outputs,
                        std::vector<CompletionPtr>* completions,
                        const std::vector<int64_t>& keep) const {
  const size_t num_args = num_devices > 0 ? args[0].size() : 0;
  Scratch<PJRT_Buffer*> inputs(num_devices * num_args);
  for (size_t d = 0; d < num_devices; ++d) {
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
      if (i < num_args) inputs[d * num_args + i] = arg->raw();
    }
    if (args[d].size() != num_args) {
      throw std::invalid_argument("execute: devices were given different numbers of arguments");
    }
  }

  const PJRT_Api* api = client_->api();
  Scratch<PJRT_Buffer*> raw_outputs(num_devices * num_outputs_);
  Scratch<PJRT_Buffer* const*> argument_lists(num_devices);
  Scratch<PJRT_Buffer**> output_lists(num_devices);
  Scratch<PJRT_Event*> complete(num_devices);
  for (size_t d = 0; d < num_devices; ++d) {
    argument_lists[d] = inputs.data() + d * num_args;
    output_lists[d] = raw_outputs.data() + d * num_outputs_;
  }
  // Everything the plugin call needs behind one reference: std::function keeps so small a
  // callable without allocating.
  struct Call {
    const PJRT_Api* api;
    int launch_id;
    const std::vector<int64_t>* keep;
    int64_t launch_ns;
    PJRT_LoadedExecutable_Execute_Args execute;
  } call{api, launch_id, &keep, 0, {}};
  call.execute.struct_size = PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE;
  call.execute.executable = executable_;
  call.execute.argument_lists = argument_lists.data();
  call.execute.num_devices = num_devices;
  call.execute.num_args = num_args;
  call.execute.output_lists = output_lists.data();
  call.execute.execute_device = execute_device;
  call.execute.device_complete_events = complete.data();
  try {
    inject_fault("allocate");  // outputs
    inject_fault("execute");
    client_->plugin().call_sized(
        GrownStruct::kExecuteOptions,
        [&call](size_t struct_size) {
          // Sized for the plugin: newer plugins expect a larger PJRT_ExecuteOptions.
          Padded<PJRT_ExecuteOptions> options(struct_size);
          options->launch_id = call.launch_id;
          options->non_donatable_input_indices = call.keep->data();
          options->num_non_donatable_input_indices = call.keep->size();
          call.execute.options = options.get();
          call.launch_ns = now_ns();
          return call.api->PJRT_LoadedExecutable_Execute(&call.execute);
        },
        "PJRT_LoadedExecutable_Execute");
  } catch (const PjrtError& e) {
    if (e.code() == PJRT_Error_Code_RESOURCE_EXHAUSTED) {
      for (size_t d = 0; d < num_devices; ++d) client_->memory().out_of_memory(devices[d]);
    }
    throw;
  }
  counters().executions += 1;
  counters().output_buffers += static_cast<int64_t>(num_outputs_ * num_devices);
  for (size_t d = 0; d < num_devices; ++d) {
    CompletionPtr done =
        client_->timeline().launched(api, complete[d], devices[d], name_, call.launch_ns);
    if (completions != nullptr) completions->push_back(std::move(done));
    for (const Buffer* arg : args[d]) arg->forget_if_donated();
  }

  for (size_t d = 0; d < num_devices; ++d) outputs[d].reserve(outputs[d].size() + num_outputs_);
  for (size_t d = 0; d < num_devices; ++d) {
    for (size_t i = 0; i < num_outputs_; ++i) {
      try {
        outputs[d].push_back(
            std::make_shared<Buffer>(client_, raw_outputs[d * num_outputs_ + i], devices[d]));
      } catch (...) {
        // The failed Buffer destroyed its output; the ones not yet wrapped are still raw.
        for (size_t k = d * num_outputs_ + i + 1; k < num_devices * num_outputs_; ++k) {
          PJRT_Buffer_Destroy_Args destroy{};
          destroy.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE;
          destroy.buffer = raw_outputs[k];
          api->PJRT_Buffer_Destroy(&destroy);
        }
        throw;
      }
    }
  }
}

}  // namespace torch_pjrt::runtime

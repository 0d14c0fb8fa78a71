// Client: PJRT client creation, device lookup, host-to-device copies and StableHLO compilation.
#include "client.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "buffer.h"
#include "error.h"
#include "event.h"
#include "executable.h"
#include "fault.h"
#include "host_lease.h"
#include "metrics.h"

namespace torch_pjrt::runtime {

namespace {

PJRT_NamedValue to_named_value(const CreateOption& option) {
  PJRT_NamedValue value{};
  value.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  value.name = option.name.c_str();
  value.name_size = option.name.size();
  value.value_size = 1;
  if (const auto* v = std::get_if<int64_t>(&option.value)) {
    value.type = PJRT_NamedValue_kInt64;
    value.int64_value = *v;
  } else if (const auto* v = std::get_if<bool>(&option.value)) {
    value.type = PJRT_NamedValue_kBool;
    value.bool_value = *v;
  } else if (const auto* v = std::get_if<float>(&option.value)) {
    value.type = PJRT_NamedValue_kFloat;
    value.float_value = *v;
  } else if (const auto* v = std::get_if<std::vector<int64_t>>(&option.value)) {
    value.type = PJRT_NamedValue_kInt64List;
    value.int64_array_value = v->data();
    value.value_size = v->size();
  } else {
    const auto& s = std::get<std::string>(option.value);
    value.type = PJRT_NamedValue_kString;
    value.string_value = s.c_str();
    value.value_size = s.size();
  }
  return value;
}

// The option name in "Unexpected option name passed to PJRT_Client_Create: <name>", or "".
std::string rejected_option(const std::string& message) {
  static const std::string kMarker = "Unexpected option name passed to PJRT_Client_Create: ";
  const size_t at = message.find(kMarker);
  if (at == std::string::npos) return "";
  const size_t start = at + kMarker.size();
  size_t end = start;
  while (end < message.size() && (std::isalnum(static_cast<unsigned char>(message[end])) ||
                                  message[end] == '_' || message[end] == '.')) {
    ++end;
  }
  return message.substr(start, end - start);
}

PJRT_Client* create_client(const PJRT_Api* api, const std::vector<CreateOption>& options,
                           KeyValueStore* kv_store) {
  std::vector<PJRT_NamedValue> named;
  for (const auto& option : options) named.push_back(to_named_value(option));
  PJRT_Client_Create_Args create{};
  create.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
  create.create_options = named.data();
  create.num_options = named.size();
  if (kv_store != nullptr) install_kv_callbacks(create, kv_store);
  check(api, api->PJRT_Client_Create(&create), "PJRT_Client_Create");
  return create.client;
}

size_t count_outputs(const PJRT_Api* api, PJRT_LoadedExecutable* loaded) {
  PJRT_Executable_NumOutputs_Args outputs{};
  outputs.struct_size = PJRT_Executable_NumOutputs_Args_STRUCT_SIZE;
  query_executable(
      api, loaded,
      [&](PJRT_Executable* executable) {
        outputs.executable = executable;
        return api->PJRT_Executable_NumOutputs(&outputs);
      },
      "PJRT_Executable_NumOutputs");
  return outputs.num_outputs;
}

}  // namespace

std::string describe(const CreateOption& option) {
  std::ostringstream out;
  out << option.name << "=";
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) {
          out << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
          out << "[";
          for (size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
          out << "]";
        } else {
          out << v;
        }
      },
      option.value);
  return out.str();
}

std::shared_ptr<Client> Client::create(std::shared_ptr<Plugin> plugin,
                                       const std::vector<CreateOption>& options,
                                       std::shared_ptr<KeyValueStore> kv_store) {
  if (plugin == nullptr) throw std::invalid_argument("Client::create: null plugin");
  std::shared_ptr<Client> client(new Client(std::move(plugin)));
  client->kv_store_ = std::move(kv_store);
  const PJRT_Api* api = client->api();

  std::vector<CreateOption> sending = options;
  while (client->client_ == nullptr) {
    try {
      client->client_ = create_client(api, sending, client->kv_store_.get());
    } catch (const PjrtError& e) {
      const std::string name = rejected_option(e.what());
      auto it = std::find_if(sending.begin(), sending.end(),
                             [&](const CreateOption& o) { return o.name == name; });
      if (it == sending.end()) throw;
      if (!it->optional) {
        throw PjrtError(std::string(e.what()) + " (the option was requested explicitly; this " +
                            "plugin does not know it)",
                        e.code());
      }
      client->options_dropped_.push_back(name);
      sending.erase(it);
    }
  }
  client->options_sent_ = std::move(sending);

  PJRT_Client_PlatformName_Args name{};
  name.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE;
  name.client = client->client_;
  check(api, api->PJRT_Client_PlatformName(&name), "PJRT_Client_PlatformName");
  client->platform_name_.assign(name.platform_name, name.platform_name_size);

  PJRT_Client_PlatformVersion_Args version{};
  version.struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE;
  version.client = client->client_;
  check(api, api->PJRT_Client_PlatformVersion(&version), "PJRT_Client_PlatformVersion");
  client->platform_version_.assign(version.platform_version, version.platform_version_size);

  PJRT_Client_AddressableDevices_Args devices{};
  devices.struct_size = PJRT_Client_AddressableDevices_Args_STRUCT_SIZE;
  devices.client = client->client_;
  check(api, api->PJRT_Client_AddressableDevices(&devices), "PJRT_Client_AddressableDevices");
  client->devices_.assign(devices.addressable_devices,
                          devices.addressable_devices + devices.num_addressable_devices);
  client->memory_ = std::make_unique<MemoryLedger>(client->device_count());
  client->timeline_ = std::make_unique<Timeline>(client->device_count());
  return client;
}

Client::~Client() {
  timeline_.reset();  // waits for running executions, whose callbacks refer to it
  if (client_ == nullptr) return;
  PJRT_Client_Destroy_Args args{};
  args.struct_size = PJRT_Client_Destroy_Args_STRUCT_SIZE;
  args.client = client_;
  try {
    check(api(), api()->PJRT_Client_Destroy(&args), "PJRT_Client_Destroy");
  } catch (const PjrtError&) {
  }
}

PJRT_Device* Client::device(int index) const {
  if (index < 0 || index >= device_count()) {
    throw std::out_of_range("device index " + std::to_string(index) +
                            " out of range: " + platform_name_ + " client has " +
                            std::to_string(device_count()) + " devices");
  }
  if (devices_[index] == nullptr) {
    throw std::out_of_range("device index " + std::to_string(index) +
                            " belongs to another process of this job; this process drives "
                            "device " +
                            std::to_string(device_index(local_device_)));
  }
  return devices_[index];
}

void Client::place_device_at(int index, int count) {
  if (devices_.size() != 1 || index < 0 || index >= count) {
    throw std::logic_error("place_device_at: needs a client with one device and an index below " +
                           std::to_string(count) + ", got " + std::to_string(devices_.size()) +
                           " devices and index " + std::to_string(index));
  }
  local_device_ = devices_[0];
  devices_.assign(count, nullptr);
  devices_[index] = local_device_;
  memory_ = std::make_unique<MemoryLedger>(count);
  timeline_ = std::make_unique<Timeline>(count);
}

namespace {

PJRT_DeviceDescription* description_of(const PJRT_Api* api, PJRT_Device* device) {
  PJRT_Device_GetDescription_Args description{};
  description.struct_size = PJRT_Device_GetDescription_Args_STRUCT_SIZE;
  description.device = device;
  check(api, api->PJRT_Device_GetDescription(&description), "PJRT_Device_GetDescription");
  return description.device_description;
}

}  // namespace

int64_t Client::device_id(int index) const {
  PJRT_DeviceDescription_Id_Args id{};
  id.struct_size = PJRT_DeviceDescription_Id_Args_STRUCT_SIZE;
  id.device_description = description_of(api(), device(index));
  check(api(), api()->PJRT_DeviceDescription_Id(&id), "PJRT_DeviceDescription_Id");
  return id.id;
}

int Client::device_index(const PJRT_Device* device) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == device) return static_cast<int>(i);
  }
  return -1;
}

std::string Client::device_kind(int index) const {
  PJRT_DeviceDescription_Kind_Args kind{};
  kind.struct_size = PJRT_DeviceDescription_Kind_Args_STRUCT_SIZE;
  kind.device_description = description_of(api(), device(index));
  check(api(), api()->PJRT_DeviceDescription_Kind(&kind), "PJRT_DeviceDescription_Kind");
  return std::string(kind.device_kind, kind.device_kind_size);
}

std::shared_ptr<Buffer> Client::transfer(const void* data, ElementType type,
                                         const std::vector<int64_t>& dims, int device,
                                         PJRT_HostBufferSemantics semantics, PJRT_Event** done) {
  PJRT_Device* target = this->device(device);
  const PJRT_Buffer_Type pjrt_type = to_pjrt(type);
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 0)
      throw std::invalid_argument("buffer_from_host: negative dimension " + std::to_string(d));
    if (d != 0 && elements > std::numeric_limits<int64_t>::max() / d) {
      throw std::invalid_argument("buffer_from_host: shape has too many elements");
    }
    elements *= d;
  }
  if (data == nullptr && elements > 0) {
    throw std::invalid_argument("buffer_from_host: null data for a non-empty buffer");
  }

  PJRT_Client_BufferFromHostBuffer_Args args{};
  args.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
  args.client = client_;
  args.data = data;
  args.type = pjrt_type;
  args.dims = dims.data();
  args.num_dims = dims.size();
  args.host_buffer_semantics = semantics;
  args.device = target;
  try {
    inject_fault("allocate");
    inject_fault("from_host");
    check(api(), api()->PJRT_Client_BufferFromHostBuffer(&args),
          "PJRT_Client_BufferFromHostBuffer");
  } catch (const PjrtError& e) {
    if (e.code() == PJRT_Error_Code_RESOURCE_EXHAUSTED) memory().out_of_memory(device);
    throw;
  }
  *done = args.done_with_host_buffer;
  counters().host_to_device_bytes += elements * static_cast<int64_t>(element_size(type));
  return std::make_shared<Buffer>(shared_from_this(), args.buffer, device);
}

std::shared_ptr<Buffer> Client::buffer_from_host(const void* data, ElementType type,
                                                 const std::vector<int64_t>& dims, int device) {
  PJRT_Event* done_event = nullptr;
  auto buffer = transfer(data, type, dims, device,
                         PJRT_HostBufferSemantics_kImmutableOnlyDuringCall, &done_event);
  Event(api(), done_event).await("PJRT_Client_BufferFromHostBuffer");
  return buffer;
}

std::shared_ptr<Buffer> Client::buffer_from_host_async(const void* data, ElementType type,
                                                       const std::vector<int64_t>& dims, int device,
                                                       PJRT_Event** done) {
  return transfer(data, type, dims, device,
                  PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes, done);
}

bool Client::dma_map(void* data, size_t size) const {
  const PJRT_Api* a = api();
  if (a->struct_size <= offsetof(PJRT_Api, PJRT_Client_DmaUnmap) ||
      a->PJRT_Client_DmaMap == nullptr || a->PJRT_Client_DmaUnmap == nullptr) {
    return false;
  }
  PJRT_Client_DmaMap_Args args{};
  args.struct_size = PJRT_Client_DmaMap_Args_STRUCT_SIZE;
  args.client = client_;
  args.data = data;
  args.size = size;
  try {
    check(a, a->PJRT_Client_DmaMap(&args), "PJRT_Client_DmaMap");
  } catch (const PjrtError&) {
    return false;
  }
  return true;
}

void Client::dma_unmap(void* data) const {
  PJRT_Client_DmaUnmap_Args args{};
  args.struct_size = PJRT_Client_DmaUnmap_Args_STRUCT_SIZE;
  args.client = client_;
  args.data = data;
  try {
    check(api(), api()->PJRT_Client_DmaUnmap(&args), "PJRT_Client_DmaUnmap");
  } catch (const PjrtError&) {
  }
}

std::shared_ptr<Buffer> Client::buffer_sharing_host(const void* data, ElementType type,
                                                    const std::vector<int64_t>& dims, int device,
                                                    HostLease& lease) {
  PJRT_Event* done_event = nullptr;
  auto buffer =
      transfer(data, type, dims, device, PJRT_HostBufferSemantics_kImmutableZeroCopy, &done_event);
  lease.watch(done_event);
  return buffer;
}

namespace {
std::atomic<bool> cache_only_flag{false};
}  // namespace

void set_cache_only(bool on) { cache_only_flag = on; }
bool cache_only() { return cache_only_flag; }

std::shared_ptr<Executable> Client::compile(const std::string& mlir_text,
                                            const CompileOptions& options) {
  if (mlir_text.empty()) throw std::invalid_argument("compile: empty StableHLO program");
  if (cache_only_flag) {
    throw std::runtime_error(
        "a program is not in the compilation cache and the user has asserted that no more "
        "compilation should happen (torch.tpu._set_cache_only(True))");
  }
  inject_fault("compile");
  std::string code = mlir_text;
  static const char kFormat[] = "mlir";
  PJRT_Program program{};
  program.struct_size = PJRT_Program_STRUCT_SIZE;
  program.code = code.data();
  program.code_size = code.size();
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;

  PJRT_Client_Compile_Args args{};
  args.struct_size = PJRT_Client_Compile_Args_STRUCT_SIZE;
  args.client = client_;
  args.program = &program;
  const std::string serialized = options.serialize();
  args.compile_options = serialized.data();
  args.compile_options_size = serialized.size();
  const auto start = std::chrono::steady_clock::now();
  check(api(), api()->PJRT_Client_Compile(&args), "PJRT_Client_Compile");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  size_t num_outputs = 0;
  try {
    num_outputs = count_outputs(api(), args.executable);
  } catch (const PjrtError&) {
    PJRT_LoadedExecutable_Destroy_Args destroy{};
    destroy.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
    destroy.executable = args.executable;
    api()->PJRT_LoadedExecutable_Destroy(&destroy);
    throw;
  }
  counters().compiles += 1;
  counters().compile_nanoseconds +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
  return std::make_shared<Executable>(shared_from_this(), args.executable, num_outputs);
}

std::shared_ptr<Executable> Client::deserialize(const std::string& bytes,
                                                const CompileOptions& options) {
  if (bytes.empty()) throw std::invalid_argument("deserialize: empty executable");
  PJRT_LoadedExecutable* loaded = nullptr;
  const std::string serialized = options.serialize();
  plugin_->call_sized(
      GrownStruct::kDeserializeAndLoadArgs,
      [&](size_t struct_size) {
        Padded<PJRT_Executable_DeserializeAndLoad_Args> args(struct_size);
        args->client = client_;
        args->serialized_executable = bytes.data();
        args->serialized_executable_size = bytes.size();
        args->overridden_serialized_compile_options = serialized.data();
        args->overridden_serialized_compile_options_size = serialized.size();
        PJRT_Error* error = api()->PJRT_Executable_DeserializeAndLoad(args.get());
        loaded = args->loaded_executable;
        return error;
      },
      "PJRT_Executable_DeserializeAndLoad");
  size_t num_outputs = 0;
  try {
    num_outputs = count_outputs(api(), loaded);
  } catch (const PjrtError&) {
    PJRT_LoadedExecutable_Destroy_Args destroy{};
    destroy.struct_size = PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE;
    destroy.executable = loaded;
    api()->PJRT_LoadedExecutable_Destroy(&destroy);
    throw;
  }
  return std::make_shared<Executable>(shared_from_this(), loaded, num_outputs);
}

}  // namespace torch_pjrt::runtime

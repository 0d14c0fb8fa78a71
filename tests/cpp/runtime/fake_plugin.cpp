// A fake PJRT plugin for the runtime's negotiation tests: it reports a configurable API version,
// validates create-option names and struct sizes the way XLA's plugins do (same error messages),
// and offers an extension chain. Tests load copies of it (each copy is a separate library with
// its own state), configure each copy through FakePjrt_Configure before Plugin::load, and read
// what it received through FakePjrt_Received.
#include <pjrt_c_api.h>

#include <cstring>
#include <set>
#include <sstream>
#include <string>

struct PJRT_Error {
  PJRT_Error_Code code;
  std::string message;
};
struct PJRT_Client {
  int unused;
};

namespace {

PJRT_Api api{};
std::set<std::string> accepted;   // create options a validating plugin accepts
bool validate_options = true;     // false: ignore unknown names, as xla-cpu-pjrt 0.0.1 does
size_t deserialize_min_size = 0;  // the PJRT_Executable_DeserializeAndLoad_Args size it needs
std::string received;             // what the last call saw, for the tests

PJRT_Extension_Base profiler{sizeof(PJRT_Extension_Base), PJRT_Extension_Type_Profiler, nullptr};
PJRT_Extension_Base future{sizeof(PJRT_Extension_Base), static_cast<PJRT_Extension_Type>(42),
                           &profiler};

PJRT_Error* error(PJRT_Error_Code code, const std::string& message) {
  return new PJRT_Error{code, message};
}

PJRT_Error* unimplemented(void*) { return error(PJRT_Error_Code_UNIMPLEMENTED, "fake plugin"); }

void error_destroy(PJRT_Error_Destroy_Args* args) { delete args->error; }
void error_message(PJRT_Error_Message_Args* args) {
  args->message = args->error->message.data();
  args->message_size = args->error->message.size();
}
PJRT_Error* error_get_code(PJRT_Error_GetCode_Args* args) {
  args->code = args->error->code;
  return nullptr;
}
PJRT_Error* initialize(PJRT_Plugin_Initialize_Args*) { return nullptr; }
PJRT_Error* attributes(PJRT_Plugin_Attributes_Args* args) {
  args->attributes = nullptr;
  args->num_attributes = 0;
  return nullptr;
}

PJRT_Error* client_create(PJRT_Client_Create_Args* args) {
  std::string names;
  for (size_t i = 0; i < args->num_options; ++i) {
    const PJRT_NamedValue& option = args->create_options[i];
    const std::string name(option.name, option.name_size);
    if (validate_options && accepted.count(name) == 0) {
      return error(PJRT_Error_Code_INVALID_ARGUMENT,
                   "Unexpected option name passed to PJRT_Client_Create: " + name);
    }
    names += (names.empty() ? "" : ",") + name;
  }
  received = names;
  args->client = new PJRT_Client{0};
  return nullptr;
}
PJRT_Error* client_destroy(PJRT_Client_Destroy_Args* args) {
  delete args->client;
  return nullptr;
}
PJRT_Error* platform_name(PJRT_Client_PlatformName_Args* args) {
  args->platform_name = "fake";
  args->platform_name_size = 4;
  return nullptr;
}
PJRT_Error* platform_version(PJRT_Client_PlatformVersion_Args* args) {
  args->platform_version = "0";
  args->platform_version_size = 1;
  return nullptr;
}
PJRT_Error* addressable_devices(PJRT_Client_AddressableDevices_Args* args) {
  args->addressable_devices = nullptr;
  args->num_addressable_devices = 0;
  return nullptr;
}
PJRT_Error* deserialize(PJRT_Executable_DeserializeAndLoad_Args* args) {
  if (args->struct_size < deserialize_min_size) {
    std::ostringstream message;
    message << "Unexpected PJRT_Executable_DeserializeAndLoad_Args size: expected "
            << deserialize_min_size << ", got " << args->struct_size
            << ". The plugin is likely built with a later version than the framework.";
    return error(PJRT_Error_Code_INVALID_ARGUMENT, message.str());
  }
  received = "deserialize struct_size " + std::to_string(args->struct_size);
  return error(PJRT_Error_Code_UNIMPLEMENTED, received);
}

}  // namespace

extern "C" {

// accepted_options: comma-separated names; nullptr: accept any name without validating.
// drop_function: offset of a PJRT_Api member to leave null (0: none).
void FakePjrt_Configure(int major, int minor, const char* accepted_options, size_t deserialize_min,
                        size_t drop_function) {
  api = PJRT_Api{};
  api.struct_size = PJRT_Api_STRUCT_SIZE;
  api.extension_start = &future;
  api.pjrt_api_version.struct_size = PJRT_Api_Version_STRUCT_SIZE;
  api.pjrt_api_version.major_version = major;
  api.pjrt_api_version.minor_version = minor;
  // Every function slot first answers UNIMPLEMENTED, then the ones the tests exercise are real.
  auto** slots = reinterpret_cast<void**>(&api.PJRT_Error_Destroy);
  auto** end = reinterpret_cast<void**>(reinterpret_cast<char*>(&api) + sizeof(api));
  for (auto** slot = slots; slot < end; ++slot) *slot = reinterpret_cast<void*>(&unimplemented);
  api.PJRT_Error_Destroy = error_destroy;
  api.PJRT_Error_Message = error_message;
  api.PJRT_Error_GetCode = error_get_code;
  api.PJRT_Plugin_Initialize = initialize;
  api.PJRT_Plugin_Attributes = attributes;
  api.PJRT_Client_Create = client_create;
  api.PJRT_Client_Destroy = client_destroy;
  api.PJRT_Client_PlatformName = platform_name;
  api.PJRT_Client_PlatformVersion = platform_version;
  api.PJRT_Client_AddressableDevices = addressable_devices;
  api.PJRT_Executable_DeserializeAndLoad = deserialize;
  if (drop_function != 0) {
    *reinterpret_cast<void**>(reinterpret_cast<char*>(&api) + drop_function) = nullptr;
  }
  validate_options = accepted_options != nullptr;
  accepted.clear();
  if (accepted_options != nullptr) {
    std::stringstream names(accepted_options);
    for (std::string name; std::getline(names, name, ',');) accepted.insert(name);
  }
  deserialize_min_size = deserialize_min;
  received.clear();
}

const char* FakePjrt_Received() { return received.c_str(); }

const PJRT_Api* GetPjrtApi() { return &api; }
}

// find_plugin() and Plugin::load(): locating, dlopening and validating a PJRT plugin, and the
// per-plugin struct sizes.
#include "plugin.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "error.h"

namespace torch_pjrt::runtime {

namespace fs = std::filesystem;

namespace {

struct Kind {
  const char* name;
  std::vector<const char*> files;         // relative to a search dir
  std::vector<const char*> device_nodes;  // auto mode tries the kind only if one exists
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = {
      {"tpu", {"libtpu/libtpu.so"}, {"/dev/accel0", "/dev/vfio/0"}},
      {"cuda",
       {"jax_plugins/xla_cuda13/xla_cuda_plugin.so", "jax_plugins/xla_cuda12/xla_cuda_plugin.so"},
       {"/dev/nvidia0"}},
      // The newer XLA CPU plugin first: it compiles faster and runs compiled steps faster
      // (docs/benchmarks.md, "CPU plugins").
      {"cpu",
       {"lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so", "xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"},
       {}},
  };
  return all;
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

std::vector<std::string> candidates(const Kind& kind, const std::vector<std::string>& search_dirs) {
  std::vector<std::string> paths;
  if (std::string(kind.name) == "tpu") {
    if (const char* env = std::getenv("TPU_LIBRARY_PATH"); env != nullptr && *env != '\0') {
      paths.push_back(env);
    }
  }
  for (const auto& dir : search_dirs) {
    for (const char* file : kind.files) paths.push_back((fs::path(dir) / file).string());
  }
  return paths;
}

bool device_present(const Kind& kind) {
  if (kind.device_nodes.empty()) return true;
  for (const char* node : kind.device_nodes) {
    std::error_code ec;
    if (fs::exists(node, ec)) return true;
  }
  return false;
}

std::string join(const std::vector<std::string>& items) {
  if (items.empty()) return "(none)";
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string render(const PJRT_NamedValue& value) {
  std::ostringstream out;
  switch (value.type) {
    case PJRT_NamedValue_kString:
      return std::string(value.string_value, value.value_size);
    case PJRT_NamedValue_kInt64:
      out << value.int64_value;
      break;
    case PJRT_NamedValue_kInt64List:
      // Three-element lists are versions (e.g. stablehlo_current_version), hence "a.b.c".
      for (size_t i = 0; i < value.value_size; ++i) {
        if (i > 0) out << (value.value_size == 3 ? "." : ",");
        out << value.int64_array_value[i];
      }
      break;
    case PJRT_NamedValue_kFloat:
      out << value.float_value;
      break;
    case PJRT_NamedValue_kBool:
      out << (value.bool_value ? "true" : "false");
      break;
  }
  return out.str();
}

// The PJRT_Api functions this project calls: a plugin lacking one is refused at load.
struct Required {
  const char* name;
  size_t offset;
};
#define TP_REQUIRED(fn) \
  Required { #fn, offsetof(PJRT_Api, fn) }
const Required kRequired[] = {
    TP_REQUIRED(PJRT_Error_Destroy),
    TP_REQUIRED(PJRT_Error_Message),
    TP_REQUIRED(PJRT_Error_GetCode),
    TP_REQUIRED(PJRT_Event_Destroy),
    TP_REQUIRED(PJRT_Event_IsReady),
    TP_REQUIRED(PJRT_Event_Await),
    TP_REQUIRED(PJRT_Client_Create),
    TP_REQUIRED(PJRT_Client_Destroy),
    TP_REQUIRED(PJRT_Client_PlatformName),
    TP_REQUIRED(PJRT_Client_PlatformVersion),
    TP_REQUIRED(PJRT_Client_AddressableDevices),
    TP_REQUIRED(PJRT_Client_Compile),
    TP_REQUIRED(PJRT_Client_BufferFromHostBuffer),
    TP_REQUIRED(PJRT_Device_GetDescription),
    TP_REQUIRED(PJRT_DeviceDescription_Kind),
    TP_REQUIRED(PJRT_Executable_Destroy),
    TP_REQUIRED(PJRT_Executable_NumOutputs),
    TP_REQUIRED(PJRT_Executable_Serialize),
    TP_REQUIRED(PJRT_Executable_DeserializeAndLoad),
    TP_REQUIRED(PJRT_LoadedExecutable_Destroy),
    TP_REQUIRED(PJRT_LoadedExecutable_GetExecutable),
    TP_REQUIRED(PJRT_LoadedExecutable_Execute),
    TP_REQUIRED(PJRT_Buffer_Destroy),
    TP_REQUIRED(PJRT_Buffer_ElementType),
    TP_REQUIRED(PJRT_Buffer_Dimensions),
    TP_REQUIRED(PJRT_Buffer_ToHostBuffer),
    TP_REQUIRED(PJRT_Buffer_ReadyEvent),
};
#undef TP_REQUIRED

// Names the first required function the plugin's PJRT_Api lacks (beyond its struct_size or
// null), or returns "".
std::string missing_function(const PJRT_Api* api) {
  for (const Required& r : kRequired) {
    if (r.offset + sizeof(void*) > api->struct_size) return r.name;
    const void* fn = *reinterpret_cast<void* const*>(reinterpret_cast<const char*>(api) + r.offset);
    if (fn == nullptr) return r.name;
  }
  return "";
}

std::string version(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string plugin_kind(const std::string& path) {
  const std::string normal = fs::path(path).lexically_normal().string();
  if (const char* env = std::getenv("TPU_LIBRARY_PATH"); env != nullptr && *env != '\0') {
    if (fs::path(env).lexically_normal().string() == normal) return "tpu";
  }
  for (const auto& kind : kinds()) {
    for (const char* file : kind.files) {
      if (ends_with(normal, std::string("/") + file) || normal == file) return kind.name;
    }
  }
  return "";
}

std::string find_plugin(const std::string& request, const std::vector<std::string>& search_dirs) {
  if (request.find('/') != std::string::npos ||
      (request.size() >= 3 && request.compare(request.size() - 3, 3, ".so") == 0)) {
    if (exists(request)) return request;
    throw std::runtime_error("PJRT plugin '" + request + "' not found; searched: " + request);
  }

  std::vector<std::string> searched;
  std::vector<std::string> skipped;
  bool known = request.empty();
  for (const auto& kind : kinds()) {
    if (!request.empty() && request != kind.name) continue;
    known = true;
    if (request.empty() && !device_present(kind)) {
      skipped.push_back(std::string(kind.name) + " (no device node)");
      continue;
    }
    for (const auto& path : candidates(kind, search_dirs)) {
      searched.push_back(path);
      if (exists(path)) return path;
    }
  }

  if (!known) {
    // Lists where the known kinds would be looked up, to show what the request could have been.
    for (const auto& kind : kinds()) {
      for (const auto& path : candidates(kind, search_dirs)) searched.push_back(path);
    }
    throw std::runtime_error("unknown PJRT plugin '" + request +
                             "' (expected \"\", \"tpu\", \"cuda\", \"cpu\" or a .so path); known "
                             "locations: " +
                             join(searched));
  }
  std::string message = request.empty() ? "no PJRT plugin found (auto)"
                                        : "no PJRT plugin found for '" + request + "'";
  message += "; searched: " + join(searched);
  if (!skipped.empty()) message += "; skipped: " + join(skipped);
  throw std::runtime_error(message);
}

std::shared_ptr<Plugin> Plugin::load(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<Plugin>> loaded;

  std::error_code ec;
  // Canonical when the file exists, so two spellings of one path share an entry; otherwise as
  // given, leaving bare library names to dlopen's search.
  fs::path canonical = fs::canonical(path, ec);
  const std::string key = ec ? path : canonical.string();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;

  auto fail = [&](const std::string& reason) {
    return std::runtime_error("cannot load PJRT plugin " + path + ": " + reason);
  };
  // Never dlclosed: PJRT objects and plugin threads may outlive any owner we could track.
  void* handle = dlopen(key.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw fail(dlerror());
  dlerror();
  using GetPjrtApiFn = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetPjrtApiFn>(dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr) {
    const char* error = dlerror();
    throw fail(std::string("no GetPjrtApi symbol (") + (error ? error : "null") + ")");
  }
  const PJRT_Api* api = get_api();
  if (api == nullptr) throw fail("GetPjrtApi returned null");

  const int major = api->pjrt_api_version.major_version;
  const int minor = api->pjrt_api_version.minor_version;
  const std::string versions = "the plugin implements PJRT C API " + version(major, minor) +
                               ", torch_pjrt was built with " +
                               version(PJRT_API_MAJOR, PJRT_API_MINOR);
  if (major != PJRT_API_MAJOR) {
    throw fail(versions + ": major versions differ, so the two are not ABI-compatible");
  }
  // PJRT C API 0.57 rearranged PJRT_Api's function table: older plugins would be called at the
  // wrong offsets.
  constexpr int kOldestMinor = 57;
  if (minor < kOldestMinor) {
    throw fail(versions + "; plugins older than " + version(PJRT_API_MAJOR, kOldestMinor) +
               " lay out their function table differently");
  }
  if (const std::string missing = missing_function(api); !missing.empty()) {
    throw fail(versions + ", and the plugin does not provide " + missing +
               ", which torch_pjrt needs");
  }

  std::shared_ptr<Plugin> plugin(new Plugin());
  plugin->api_ = api;
  plugin->path_ = key;
  plugin->api_major_ = major;
  plugin->api_minor_ = minor;
  plugin->extensions_ = walk_extensions(api->extension_start);
  for (int i = 0; i < kGrownStructCount; ++i) {
    plugin->sizes_[i] = initial_struct_size(static_cast<GrownStruct>(i), minor);
  }
  try {
    if (api->PJRT_Plugin_Initialize != nullptr) {
      PJRT_Plugin_Initialize_Args init{};
      init.struct_size = PJRT_Plugin_Initialize_Args_STRUCT_SIZE;
      check(api, api->PJRT_Plugin_Initialize(&init), "PJRT_Plugin_Initialize");
    }
    if (api->PJRT_Plugin_Attributes != nullptr) {
      PJRT_Plugin_Attributes_Args attrs{};
      attrs.struct_size = PJRT_Plugin_Attributes_Args_STRUCT_SIZE;
      check(api, api->PJRT_Plugin_Attributes(&attrs), "PJRT_Plugin_Attributes");
      for (size_t i = 0; i < attrs.num_attributes; ++i) {
        const PJRT_NamedValue& value = attrs.attributes[i];
        plugin->attributes_[std::string(value.name, value.name_size)] = render(value);
      }
    }
  } catch (const PjrtError& e) {
    throw fail(e.what());
  }
  loaded[key] = plugin;
  return plugin;
}

const PJRT_Extension_Base* Plugin::find_extension(int type) const {
  for (const Extension& ext : extensions_) {
    if (ext.type == type) return ext.base;
  }
  return nullptr;
}

void Plugin::call_sized(GrownStruct s, const std::function<PJRT_Error*(size_t)>& call,
                        const char* what) const {
  const size_t size = struct_size(s);
  try {
    check(api_, call(size), what);
    return;
  } catch (const PjrtError& e) {
    const auto rejection = parse_size_rejection(e.what());
    if (!rejection || rejection->struct_name != grown_struct_info(s).name ||
        rejection->expected <= size || rejection->expected > kPaddedStructCapacity) {
      throw;
    }
    sizes_[static_cast<int>(s)] = rejection->expected;
  }
  check(api_, call(struct_size(s)), what);
}

}  // namespace torch_pjrt::runtime

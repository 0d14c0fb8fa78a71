// find_plugin() and Plugin::load(): locating, dlopening and validating a PJRT plugin.
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
      {"cpu",
       {"xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so", "lammps_jax_pjrt_cpu/pjrt_c_api_cpu_plugin.so"},
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

}  // namespace

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
  if (major != PJRT_API_MAJOR) {
    throw fail("PJRT API major version " + std::to_string(major) + ", expected " +
               std::to_string(PJRT_API_MAJOR));
  }
  // PJRT_Buffer_ReadyEvent is the last PJRT_Api member this project calls.
  constexpr size_t needed =
      offsetof(PJRT_Api, PJRT_Buffer_ReadyEvent) + sizeof(PJRT_Api::PJRT_Buffer_ReadyEvent);
  if (api->struct_size < needed) {
    throw fail("PJRT_Api struct is " + std::to_string(api->struct_size) + " bytes, need at least " +
               std::to_string(needed) + " (API " + std::to_string(major) + "." +
               std::to_string(minor) + ")");
  }

  std::shared_ptr<Plugin> plugin(new Plugin());
  plugin->api_ = api;
  plugin->path_ = key;
  plugin->api_major_ = major;
  plugin->api_minor_ = minor;
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

}  // namespace torch_pjrt::runtime

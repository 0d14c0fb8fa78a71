// Finding and loading a PJRT plugin: dlopen, GetPjrtApi, version and struct-size checks.
#pragma once

#include <pjrt_c_api.h>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "extensions.h"
#include "struct_sizes.h"

namespace torch_pjrt::runtime {

// Resolves a plugin request to the path of a shared library.
//   request: "" (auto: TPU if libtpu is installed and a TPU is present, then CUDA if the XLA CUDA
//            plugin is installed and an NVIDIA GPU is present, else CPU), "tpu", "cuda", "cpu",
//            or a path to a .so file.
//   search_dirs: directories holding installed Python packages (site-packages); the known plugin
//            files are looked up below each of them.
// Throws std::runtime_error listing every path searched when nothing is found.
std::string find_plugin(const std::string& request, const std::vector<std::string>& search_dirs);

// The kind ("tpu", "cuda", "cpu") of a plugin file, recognized by the file names find_plugin looks
// for (and TPU_LIBRARY_PATH); "" for any other file.
std::string plugin_kind(const std::string& path);

class Plugin {
 public:
  // dlopens `path` (never dlclosed), calls GetPjrtApi, checks that the API major version equals the
  // header's and that every PJRT_Api function we call is present, walks the extension chain, then
  // PJRT_Plugin_Initialize. Throws std::runtime_error with the path and the reason (naming the
  // plugin's and our API versions where they are the cause) on any failure.
  static std::shared_ptr<Plugin> load(const std::string& path);

  const PJRT_Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  int api_major() const { return api_major_; }
  int api_minor() const { return api_minor_; }
  // PJRT_Plugin_Attributes as strings (e.g. "xla_version", "stablehlo_current_version").
  const std::map<std::string, std::string>& attributes() const { return attributes_; }
  // The extensions the plugin offers, in chain order.
  const std::vector<Extension>& extensions() const { return extensions_; }
  // The extension of `type` (a PJRT_Extension_Type value, including ones newer than our header),
  // or nullptr.
  const PJRT_Extension_Base* find_extension(int type) const;

  // The struct_size currently sent for a grown argument struct (see struct_sizes.h).
  size_t struct_size(GrownStruct s) const { return sizes_[static_cast<int>(s)].load(); }
  // Runs `call(struct_size(s))` and checks its error. When the plugin rejects the size, naming a
  // larger one that fits kPaddedStructCapacity, the size is learnt and `call` runs once more;
  // `call` must build its (Padded) argument struct afresh from the size it is given.
  void call_sized(GrownStruct s, const std::function<PJRT_Error*(size_t)>& call,
                  const char* what) const;

 private:
  Plugin() = default;
  const PJRT_Api* api_ = nullptr;
  std::string path_;
  int api_major_ = 0;
  int api_minor_ = 0;
  std::map<std::string, std::string> attributes_;
  std::vector<Extension> extensions_;
  mutable std::array<std::atomic<size_t>, kGrownStructCount> sizes_{};
};

}  // namespace torch_pjrt::runtime

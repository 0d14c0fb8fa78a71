// Finding and loading a PJRT plugin: dlopen, GetPjrtApi, version and struct-size checks.
#pragma once

#include <pjrt_c_api.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace torch_pjrt::runtime {

// Resolves a plugin request to the path of a shared library.
//   request: "" (auto: TPU if libtpu is installed and a TPU is present, then CUDA if the XLA CUDA
//            plugin is installed and an NVIDIA GPU is present, else CPU), "tpu", "cuda", "cpu",
//            or a path to a .so file.
//   search_dirs: directories holding installed Python packages (site-packages); the known plugin
//            files are looked up below each of them.
// Throws std::runtime_error listing every path searched when nothing is found.
std::string find_plugin(const std::string& request, const std::vector<std::string>& search_dirs);

class Plugin {
 public:
  // dlopens `path` (never dlclosed), calls GetPjrtApi, checks the API major version and that the
  // plugin's PJRT_Api struct is at least as large as the fields we call, then
  // PJRT_Plugin_Initialize. Throws std::runtime_error with the path and the reason on any failure.
  static std::shared_ptr<Plugin> load(const std::string& path);

  const PJRT_Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  int api_major() const { return api_major_; }
  int api_minor() const { return api_minor_; }
  // PJRT_Plugin_Attributes as strings (e.g. "xla_version", "stablehlo_current_version").
  const std::map<std::string, std::string>& attributes() const { return attributes_; }

 private:
  Plugin() = default;
  const PJRT_Api* api_ = nullptr;
  std::string path_;
  int api_major_ = 0;
  int api_minor_ = 0;
  std::map<std::string, std::string> attributes_;
};

}  // namespace torch_pjrt::runtime

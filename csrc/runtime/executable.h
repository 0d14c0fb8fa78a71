// A compiled, loaded StableHLO program and its execution on one device.
#pragma once

#include <pjrt_c_api.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torch_pjrt::runtime {

class Buffer;
class Client;

// Runs `query` on the PJRT_Executable behind `loaded` (a handle the plugin creates for the call and
// that is destroyed afterwards); the error `query` returns is checked, as `what`, after that.
void query_executable(const PJRT_Api* api, PJRT_LoadedExecutable* loaded,
                      const std::function<PJRT_Error*(PJRT_Executable*)>& query, const char* what);

class Executable {
 public:
  Executable(std::shared_ptr<const Client> client, PJRT_LoadedExecutable* executable,
             size_t num_outputs);
  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;
  ~Executable();

  size_t num_outputs() const { return num_outputs_; }

  // What the program computes, for profiles (e.g. the names of its operations). Set it before the
  // first launch.
  void set_name(std::string name);
  const std::string& name() const { return *name_; }

  // Enqueues the program on device `device` with `args` (all on that device, non-null), and returns
  // the output buffers without waiting for the computation. The launch joins the client's Timeline;
  // arguments the program consumed (donated) stop counting in its MemoryLedger. Throws
  // std::invalid_argument for a null argument or one on another device, PjrtError when the plugin
  // refuses the launch.
  std::vector<std::shared_ptr<Buffer>> execute(const std::vector<const Buffer*>& args,
                                               int device) const;

  // The plugin's serialization of the compiled program (PJRT_Executable_Serialize), loadable by
  // Client::deserialize of the same plugin build. Throws PjrtError when the plugin cannot.
  std::string serialize() const;

 private:
  std::shared_ptr<const Client> client_;
  PJRT_LoadedExecutable* executable_;
  size_t num_outputs_;
  std::shared_ptr<const std::string> name_;
};

}  // namespace torch_pjrt::runtime

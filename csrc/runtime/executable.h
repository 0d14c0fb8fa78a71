// A compiled, loaded StableHLO program and its execution on one device.
#pragma once

#include <pjrt_c_api.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "timeline.h"

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
  // refuses the launch. Arguments at `keep` (indices into `args`) are not donated even where the
  // program aliases them to an output: the plugin then gives that output memory of its own.
  std::vector<std::shared_ptr<Buffer>> execute(const std::vector<const Buffer*>& args, int device,
                                               const std::vector<int64_t>& keep = {}) const;

  // For a program compiled with a device assignment (CompileOptions::replica_devices; defined in
  // executable_replicated.cpp): the client device indices the executable runs on in this process,
  // in the order execute_replicated takes argument lists.
  std::vector<int> addressable_devices() const;
  // Launches the program once on all of its addressable devices, `args[i]` on
  // addressable_devices()[i] (one list per device, else std::invalid_argument), with a launch id
  // that counts this executable's launches, so that processes launching the same programs in the
  // same order agree on it. Returns each device's outputs without waiting; `completions`, when
  // given, receives each device's Completion (what a caller waiting with a deadline polls).
  std::vector<std::vector<std::shared_ptr<Buffer>>> execute_replicated(
      const std::vector<std::vector<const Buffer*>>& args,
      std::vector<CompletionPtr>* completions = nullptr) const;

  // The plugin's serialization of the compiled program (PJRT_Executable_Serialize), loadable by
  // Client::deserialize of the same plugin build. Throws PjrtError when the plugin cannot.
  std::string serialize() const;

 private:
  // One PJRT launch on `num_devices` devices: `args[d]` on client device `devices[d]`, whose
  // outputs are appended to `outputs[d]`; `execute_device` for a portable program (one list), null
  // for one with a device assignment.
  void launch(const std::vector<const Buffer*>* args, const int* devices, size_t num_devices,
              PJRT_Device* execute_device, int launch_id,
              std::vector<std::shared_ptr<Buffer>>* outputs,
              std::vector<CompletionPtr>* completions, const std::vector<int64_t>& keep = {}) const;

  std::shared_ptr<const Client> client_;
  PJRT_LoadedExecutable* executable_;
  size_t num_outputs_;
  std::shared_ptr<const std::string> name_;
  mutable std::atomic<int> launches_{0};
};

}  // namespace torch_pjrt::runtime

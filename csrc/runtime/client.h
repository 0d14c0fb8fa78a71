// A PJRT client over one plugin: its devices, host<->device buffers and StableHLO compilation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "compile_options.h"
#include "element_type.h"
#include "kv_store.h"
#include "memory.h"
#include "plugin.h"
#include "timeline.h"

namespace torch_pjrt::runtime {

class Buffer;
class Executable;
class HostLease;

// One PJRT_NamedValue create option, e.g. {"cpu_device_count", int64_t{4}}. An optional option
// (a default torch_pjrt chooses) is dropped when the plugin does not know its name; a required
// one (asked for by the user) makes client creation fail instead.
struct CreateOption {
  std::string name;
  std::variant<int64_t, bool, float, std::string, std::vector<int64_t>> value;
  bool optional = false;
};
// "name=value" for messages and torch_pjrt.info.
std::string describe(const CreateOption& option);

// While set, Client::compile throws std::runtime_error instead of compiling: the user asserted
// that every program needed is already cached (torch.tpu._set_cache_only). Process-wide.
void set_cache_only(bool on);
bool cache_only();

class Client : public std::enable_shared_from_this<Client> {
 public:
  // Creates the client. Plugins from PJRT C API ~0.60 on reject option names they do not know
  // ("Unexpected option name passed to PJRT_Client_Create: X"); such an optional option is dropped
  // and creation retried, a required one is reported in the error. `kv_store`, when given, is
  // offered to the plugin through the key-value callbacks (multi-process clients) and kept alive
  // as long as the client.
  static std::shared_ptr<Client> create(std::shared_ptr<Plugin> plugin,
                                        const std::vector<CreateOption>& options = {},
                                        std::shared_ptr<KeyValueStore> kv_store = nullptr);
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client();

  const PJRT_Api* api() const { return plugin_->api(); }
  const Plugin& plugin() const { return *plugin_; }
  PJRT_Client* raw() const { return client_; }
  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  // The create options the plugin accepted, and the optional ones it rejected by name.
  const std::vector<CreateOption>& options_sent() const { return options_sent_; }
  const std::vector<std::string>& options_dropped() const { return options_dropped_; }

  // Addressable devices, indexed 0..device_count()-1.
  int device_count() const { return static_cast<int>(devices_.size()); }
  // Throws std::out_of_range naming the index and the count, or that another process drives it.
  PJRT_Device* device(int index) const;
  // One process of a job that drives one device each: the client's one addressable device takes
  // index `index` of `count` (the indices of the job's other processes on this host, which
  // device() refuses). Before any buffer or execution exists; throws std::logic_error unless the
  // client has exactly one device.
  void place_device_at(int index, int count);
  // Whether index `index` is one of this client's devices.
  bool has_device(int index) const {
    return index >= 0 && index < device_count() && devices_[index] != nullptr;
  }
  std::string device_kind(int index) const;
  // The global id of addressable device `index` (PJRT_DeviceDescription_Id): what device
  // assignments name, unique across the processes of a multi-process client.
  int64_t device_id(int index) const;
  // The addressable device index of `device`, or -1 when it is not one of this client's.
  int device_index(const PJRT_Device* device) const;

  // Bytes held by this client's live buffers, per device (kept by Buffer).
  MemoryLedger& memory() const { return *memory_; }
  // Executions launched on each device and when they finished (kept by Executable).
  Timeline& timeline() const { return *timeline_; }

  // Copies `data` (dense, row-major, `dims` of `type`) to device `device`. The host memory may be
  // reused as soon as this returns. Validates dims (non-negative), device index and data before
  // calling the plugin; throws std::invalid_argument / std::out_of_range / PjrtError.
  std::shared_ptr<Buffer> buffer_from_host(const void* data, ElementType type,
                                           const std::vector<int64_t>& dims, int device);
  // As buffer_from_host, but returns before the copy is done: `data` must stay alive and
  // unchanged until `*done` (the caller's to destroy; null when already done) completes.
  std::shared_ptr<Buffer> buffer_from_host_async(const void* data, ElementType type,
                                                 const std::vector<int64_t>& dims, int device,
                                                 PJRT_Event** done);
  // Registers `size` bytes at `data` with the plugin for direct transfers (PJRT_Client_DmaMap);
  // false when the plugin lacks the function or refuses. dma_unmap undoes it and never throws.
  bool dma_map(void* data, size_t size) const;
  void dma_unmap(void* data) const;
  // As buffer_from_host, but the buffer may keep using `data` instead of a copy (the CPU plugins
  // alias 64-byte-aligned memory; others copy): `data` must stay alive and unchanged until
  // `lease` (a new one, kept alive as long) says it is released.
  std::shared_ptr<Buffer> buffer_sharing_host(const void* data, ElementType type,
                                              const std::vector<int64_t>& dims, int device,
                                              HostLease& lease);

  // Compiles StableHLO (MLIR text, entry @main) for one device, portable across this client's
  // devices (always one replica, one partition; `options` adds XLA overrides). Throws
  // std::invalid_argument on empty text, PjrtError with the plugin's message when the plugin
  // rejects the program or an option.
  std::shared_ptr<Executable> compile(const std::string& mlir_text,
                                      const CompileOptions& options = {});

  // Loads an executable from Executable::serialize() bytes of the same plugin build. Throws
  // std::invalid_argument on empty bytes, PjrtError when the plugin rejects them (corrupt,
  // truncated or from another build).
  std::shared_ptr<Executable> deserialize(const std::string& bytes,
                                          const CompileOptions& options = {});

 private:
  explicit Client(std::shared_ptr<Plugin> plugin) : plugin_(std::move(plugin)) {}
  // PJRT_Client_BufferFromHostBuffer after validation; the done event goes to `done`.
  std::shared_ptr<Buffer> transfer(const void* data, ElementType type,
                                   const std::vector<int64_t>& dims, int device,
                                   PJRT_HostBufferSemantics semantics, PJRT_Event** done);
  std::shared_ptr<Plugin> plugin_;
  PJRT_Client* client_ = nullptr;
  std::vector<PJRT_Device*> devices_;
  PJRT_Device* local_device_ = nullptr;  // set by place_device_at
  std::unique_ptr<MemoryLedger> memory_;
  std::unique_ptr<Timeline> timeline_;
  std::string platform_name_;
  std::string platform_version_;
  std::vector<CreateOption> options_sent_;
  std::vector<std::string> options_dropped_;
  std::shared_ptr<KeyValueStore> kv_store_;
};

}  // namespace torch_pjrt::runtime

// The key-value store a PJRT client may use to share information between processes (the CUDA
// plugin exchanges its topology and NCCL ids through it), and the PJRT_Client_Create callbacks
// that serve a plugin from one.
#pragma once

#include <pjrt_c_api.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace torch_pjrt::runtime {

// Thread-safe, byte-clean (values are serialized protos). Implementations throw
// KeyValueTimeout when `get` waits longer than `timeout`, any other std::exception on failure.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void put(const std::string& key, const std::string& value) = 0;
  // Blocks until `key` exists.
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  // The value, or nullopt at once when the key does not exist.
  virtual std::optional<std::string> try_get(const std::string& key) = 0;
};

class KeyValueTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Fills the kv_* callbacks of `args` so that the plugin reaches `store` (which must outlive the
// client). Failures reach the plugin as PJRT errors made by its PJRT_CallbackError: a timeout
// as DEADLINE_EXCEEDED, a missing key of try_get as NOT_FOUND, anything else as INTERNAL.
void install_kv_callbacks(PJRT_Client_Create_Args& args, KeyValueStore* store);

}  // namespace torch_pjrt::runtime

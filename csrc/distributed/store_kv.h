// The PJRT key-value store served by a c10d Store (the TCPStore of torchrun or
// init_process_group), for plugins that set up multi-process clients through it (CUDA).
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "runtime/kv_store.h"

namespace torch_pjrt::distributed {

class StoreKeyValue : public runtime::KeyValueStore {
 public:
  // Keys are prefixed with `prefix` (PJRT asks callers to keep plugins' keys apart).
  StoreKeyValue(c10::intrusive_ptr<c10d::Store> store, std::string prefix);
  // A TCPStore client of host:port, connected on first use (the client may be created before
  // init_process_group; under torchrun the agent hosts this store before workers start).
  StoreKeyValue(std::string host, int port, std::string prefix, std::chrono::milliseconds timeout);

  void put(const std::string& key, const std::string& value) override;
  // Waits on a clone of the store: a blocking wait would hold a TCPStore connection's lock.
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  std::optional<std::string> try_get(const std::string& key) override;

 private:
  c10::intrusive_ptr<c10d::Store> store();

  std::mutex mutex_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::string host_;
  int port_ = 0;
  std::chrono::milliseconds timeout_{0};
  std::string prefix_;
};

}  // namespace torch_pjrt::distributed

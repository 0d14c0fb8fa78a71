// Lazily created PJRT client and the per-thread current device.
#include "device/runtime_state.h"

#include <c10/util/Exception.h>
#include <pthread.h>

#include <atomic>
#include <mutex>

#include "graph/graph.h"
#include "runtime/plugin.h"

namespace torch_pjrt::device {
namespace {

struct Config {
  std::mutex mutex;
  std::string request;
  std::vector<std::string> search_dirs;
  std::vector<runtime::CreateOption> options;
  std::shared_ptr<runtime::KeyValueStore> kv_store;
  std::shared_ptr<runtime::Client> client;
  std::string error;  // why the client could not be created, once tried
};

Config& config() {
  static Config* c = new Config;  // never destroyed: buffers may outlive static destruction
  return *c;
}

thread_local int current = 0;
std::atomic<bool> forked_after_init{false};

void mark_forked() { forked_after_init = true; }

}  // namespace

void configure(const std::string& plugin_request, const std::vector<std::string>& search_dirs,
               const std::vector<runtime::CreateOption>& options) {
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  TORCH_CHECK(!c.client,
              "torch_pjrt: the PJRT client already exists; configure it before first use");
  c.request = plugin_request;
  c.search_dirs = search_dirs;
  c.options = options;
  c.error.clear();
}

void set_kv_store(std::shared_ptr<runtime::KeyValueStore> store) {
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  TORCH_CHECK(
      !c.client,
      "torch_pjrt: the PJRT client already exists; set its key-value store before first use");
  c.kv_store = std::move(store);
}

bool in_bad_fork() { return forked_after_init; }

void check_not_forked() {
  TORCH_CHECK(!forked_after_init,
              "torch_pjrt: the tpu device cannot be used in a process forked after it was "
              "initialized; start worker processes with the 'spawn' start method "
              "(torch.multiprocessing.spawn, or multiprocessing.set_start_method('spawn'))");
}

runtime::Client& client() {
  check_not_forked();
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.client) return *c.client;
  TORCH_CHECK(c.error.empty(), c.error);
  try {
    auto plugin = runtime::Plugin::load(runtime::find_plugin(c.request, c.search_dirs));
    c.client = runtime::Client::create(plugin, c.options, c.kv_store);
    static const int registered = pthread_atfork(nullptr, nullptr, mark_forked);
    (void)registered;
  } catch (const std::exception& e) {
    c.error = std::string("torch_pjrt: cannot start the PJRT runtime: ") + e.what();
    TORCH_CHECK(false, c.error);
  }
  graph::set_client(c.client);
  return *c.client;
}

int device_count() noexcept {
  try {
    return client().device_count();
  } catch (...) {
    return 0;
  }
}

int current_device() { return current; }

void check_device_index(int index) {
  const int count = client().device_count();
  TORCH_CHECK_INDEX(index >= 0 && index < count, "tpu: invalid device index ", index, " (", count,
                    " device", count == 1 ? "" : "s", " available)");
}

void set_current_device(int index) {
  check_device_index(index);
  current = index;
}

}  // namespace torch_pjrt::device

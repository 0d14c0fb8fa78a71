// Lazily created PJRT client and the per-thread current device.
#include "device/runtime_state.h"

#include <c10/util/Exception.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>

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
  std::string error;           // why the client could not be created, once tried
  std::function<void()> hook;  // configures again from the environment, before creation
  int local_rank = -1;         // in a job of one device per process: this process's index
};

Config& config() {
  static Config* c = new Config;  // never destroyed: buffers may outlive static destruction
  return *c;
}

thread_local int current = -1;        // -1: the default device
std::atomic<int> default_device{-1};  // set when the client is created
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

void set_configure_hook(std::function<void()> hook) {
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.hook = std::move(hook);
}

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  try {
    return std::stoi(v);
  } catch (const std::exception&) {
    return fallback;
  }
}

// torchrun and mp.spawn workers: LOCAL_RANK and WORLD_SIZE. With one addressable device, it is
// "tpu:<LOCAL_RANK>" of LOCAL_WORLD_SIZE (else WORLD_SIZE) devices, as CUDA numbers a node's GPUs.
void place_by_rank(Config& c) {
  const int local_rank = env_int("LOCAL_RANK", -1);
  const int world = env_int("WORLD_SIZE", -1);
  if (local_rank < 0 || world < 1 || c.client->device_count() != 1) return;
  const int count = std::max({env_int("LOCAL_WORLD_SIZE", world), local_rank + 1, 1});
  c.client->place_device_at(local_rank, count);
  c.local_rank = local_rank;
}

}  // namespace

bool client_started() {
  Config& c = config();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.client != nullptr;
}

runtime::Client& client() {
  check_not_forked();
  Config& c = config();
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.client) return *c.client;
    hook = c.hook;
  }
  // The process model is settled here, at first device use: the hook (torch_pjrt.plugins) reads
  // the launch variables a spawned worker may have set after import.
  static std::once_flag configured;
  if (hook) {
    try {
      std::call_once(configured, hook);
    } catch (const std::exception& e) {
      TORCH_CHECK(false, "torch_pjrt: configuring the PJRT runtime failed: ", e.what());
    }
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.client) return *c.client;
  TORCH_CHECK(c.error.empty(), c.error);
  try {
    auto plugin = runtime::Plugin::load(runtime::find_plugin(c.request, c.search_dirs));
    c.client = runtime::Client::create(plugin, c.options, c.kv_store);
    place_by_rank(c);
    default_device.store(std::max(c.local_rank, 0), std::memory_order_release);
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

int current_device() {
  if (current >= 0) return current;
  int d = default_device.load(std::memory_order_acquire);
  if (d >= 0) return d;
  device_count();  // creates the client, which settles the default device
  d = default_device.load(std::memory_order_acquire);
  return d < 0 ? 0 : d;
}

int local_rank() {
  if (device_count() == 0) return -1;
  return config().local_rank;
}

void check_device_index(int index) {
  runtime::Client& cl = client();
  const int count = cl.device_count();
  TORCH_CHECK_INDEX(index >= 0 && index < count, "tpu: invalid device index ", index, " (", count,
                    " device", count == 1 ? "" : "s", " available)");
  TORCH_CHECK_INDEX(cl.has_device(index), "tpu: device tpu:", index,
                    " belongs to another process of this job; this process (LOCAL_RANK ",
                    config().local_rank, ") drives tpu:", config().local_rank);
}

void set_current_device(int index) {
  check_device_index(index);
  current = index;
}

}  // namespace torch_pjrt::device

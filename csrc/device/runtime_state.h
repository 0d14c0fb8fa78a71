// The process's PJRT plugin and client, created on first use from the configuration that the
// Python package passes at import (plugin request and package search directories).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/client.h"

namespace torch_pjrt::device {

void configure(const std::string& plugin_request, const std::vector<std::string>& search_dirs,
               const std::vector<runtime::CreateOption>& options);
// The key-value store offered to the plugin when the client is created (multi-process clients);
// set before first use.
void set_kv_store(std::shared_ptr<runtime::KeyValueStore> store);
// Called once, just before the client is created (torch_pjrt configures the plugin again from the
// environment then, so launch variables set after import count).
void set_configure_hook(std::function<void()> hook);
// Raises (naming the spawn start method) in a process forked after the client was created: the
// plugin's threads and device handles do not survive fork().
void check_not_forked();
bool in_bad_fork();
// The client, created on first call; throws std::runtime_error (the same message every time) when
// the plugin cannot be found or loaded.
runtime::Client& client();
// Whether client() has created the client (creates nothing).
bool client_started();
// Number of devices, 0 when the client cannot be created. Never throws.
int device_count() noexcept;

// Current device of the calling thread; until it sets one, the process's default device: 0, or
// in a job of one device per process (LOCAL_RANK and WORLD_SIZE set at first use) LOCAL_RANK,
// whose index the process's one device takes (device_count() is then LOCAL_WORLD_SIZE).
int current_device();
// That LOCAL_RANK, or -1 when the process is not such a job's process.
int local_rank();
void set_current_device(int index);  // throws on an index out of range
void check_device_index(int index);  // IndexError: out of range, or another process's

}  // namespace torch_pjrt::device

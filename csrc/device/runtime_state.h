// The process's PJRT plugin and client, created on first use from the configuration that the
// Python package passes at import (plugin request and package search directories).
#pragma once

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
// Raises (naming the spawn start method) in a process forked after the client was created: the
// plugin's threads and device handles do not survive fork().
void check_not_forked();
bool in_bad_fork();
// The client, created on first call; throws std::runtime_error (the same message every time) when
// the plugin cannot be found or loaded.
runtime::Client& client();
// Number of devices, 0 when the client cannot be created. Never throws.
int device_count() noexcept;

// Current device of the calling thread.
int current_device();
void set_current_device(int index);  // throws on an index out of range
void check_device_index(int index);

}  // namespace torch_pjrt::device

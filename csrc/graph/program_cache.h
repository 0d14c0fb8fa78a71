// The eager program cache: compiled executables by structural key, least recently used evicted
// beyond a capacity. Every executable holds JIT code and memory mappings in the plugin (XLA:CPU:
// about 3.4 mappings each), so an unbounded cache in a long process with many shapes ran into the
// kernel's mapping limit (vm.max_map_count, 65,530 by default) and crashed.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "runtime/executable.h"

namespace torch_pjrt::graph {

// A compiled program and the names of its operations (for error messages).
struct CachedProgram {
  std::shared_ptr<runtime::Executable> executable;
  std::string ops;
  std::shared_ptr<const std::string> text;  // its StableHLO, for torch.tpu's introspection
};

class ProgramCache {
 public:
  explicit ProgramCache(size_t capacity) : capacity_(capacity) {}

  // The program cached under `key`, now the most recently used; null when absent. Valid until
  // the next insert or set_capacity.
  const CachedProgram* find(const std::string& key);
  // Caches `program` under `key` (absent), evicting the least recently used beyond capacity;
  // returns the number evicted. An evicted executable is destroyed once its last user drops it.
  size_t insert(std::string key, CachedProgram program);
  // A capacity below the current size evicts at once; returns the number evicted.
  size_t set_capacity(size_t capacity);
  size_t capacity() const { return capacity_; }
  size_t size() const { return index_.size(); }

 private:
  using Entry = std::pair<std::string, CachedProgram>;
  size_t evict();

  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace torch_pjrt::graph

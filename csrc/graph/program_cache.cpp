// ProgramCache: an LRU list of executables with a key index.
#include "graph/program_cache.h"

namespace torch_pjrt::graph {

const CachedProgram* ProgramCache::find(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, it->second);
  return &it->second->second;
}

size_t ProgramCache::insert(std::string key, CachedProgram program) {
  entries_.emplace_front(std::move(key), std::move(program));
  index_.emplace(entries_.front().first, entries_.begin());
  return evict();
}

size_t ProgramCache::set_capacity(size_t capacity) {
  capacity_ = capacity;
  return evict();
}

size_t ProgramCache::evict() {
  size_t evicted = 0;
  while (index_.size() > capacity_) {
    index_.erase(entries_.back().first);
    entries_.pop_back();
    ++evicted;
  }
  return evicted;
}

}  // namespace torch_pjrt::graph

// IndexMap: positions of a subgraph's nodes or values by address, without an allocation per
// entry (keying each eager op's program is on the host path of every launch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace torch_pjrt::graph {

// Positions of a subgraph's nodes or values by address: a linear scan while small (an eager op's
// program has a few), an open-addressing hash table beyond, so that keying a small program
// allocates nothing per entry.
template <class T>
class IndexMap {
 public:
  // Adds `key` at `index`; false (and no change) when it is present.
  bool emplace(const T* key, int index) {
    if (find(key) != nullptr) return false;
    if (table_.empty() && size_ < kSmall) {
      small_[size_++] = {key, index};
      return true;
    }
    if (2 * (size_ + 1) > table_.size()) grow();
    place(key, index);
    ++size_;
    return true;
  }
  // The index of `key`; std::out_of_range when absent.
  int at(const T* key) const {
    const int* index = find(key);
    if (index == nullptr) throw std::out_of_range("IndexMap::at: absent key");
    return *index;
  }
  bool count(const T* key) const { return find(key) != nullptr; }
  size_t size() const { return size_; }

 private:
  using Entry = std::pair<const T*, int>;
  static constexpr size_t kSmall = 8;

  const int* find(const T* key) const {
    if (table_.empty()) {
      for (size_t i = 0; i < size_; ++i)
        if (small_[i].first == key) return &small_[i].second;
      return nullptr;
    }
    const size_t mask = table_.size() - 1;
    for (size_t i = slot(key, mask);; i = (i + 1) & mask) {
      if (table_[i].first == key) return &table_[i].second;
      if (table_[i].first == nullptr) return nullptr;
    }
  }
  static size_t slot(const T* key, size_t mask) {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(key) * 0x9e3779b97f4a7c15ull) >> 32) &
           mask;
  }
  void place(const T* key, int index) {
    const size_t mask = table_.size() - 1;
    size_t i = slot(key, mask);
    while (table_[i].first != nullptr) i = (i + 1) & mask;
    table_[i] = {key, index};
  }
  void grow() {
    std::vector<Entry> old(table_.size() * 2 < 4 * kSmall ? 4 * kSmall : table_.size() * 2);
    old.swap(table_);
    if (old.empty()) {
      for (size_t i = 0; i < size_; ++i) place(small_[i].first, small_[i].second);
    }
    for (const Entry& e : old)
      if (e.first != nullptr) place(e.first, e.second);
  }

  Entry small_[kSmall] = {};
  std::vector<Entry> table_;  // a power of two of entries, empty ones null
  size_t size_ = 0;
};

}  // namespace torch_pjrt::graph

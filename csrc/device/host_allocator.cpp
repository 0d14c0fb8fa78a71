// The pinned host allocator of "tpu" (see host_allocator.h), registered as PrivateUse1's
// at::HostAllocator (torch.accelerator's empty_host_cache and host memory stats) and handed out by
// the hooks for pin_memory(). It keeps no cache of free blocks: a freed block whose transfers
// completed goes back to the system at once.
#include "device/host_allocator.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

#include "device/runtime_state.h"
#include "runtime/timeline.h"

namespace torch_pjrt::device {
namespace {

constexpr size_t kAlignment = 4096;  // whole pages: what DMA registration maps

struct Block {
  size_t size = 0;
  bool dma_mapped = false;
  bool freed = false;                            // by its owner, waiting for its transfers
  std::vector<std::function<bool()>> transfers;  // each: whether that transfer completed
};

struct State {
  std::mutex mutex;
  std::map<uintptr_t, Block> blocks;                    // by start address
  enum { kUnknown, kMapped, kRefused } dma = kUnknown;  // refused once: not asked again
  at::HostStats stats;
};

// The stats that count blocks and bytes (reset together).
std::array<c10::CachingAllocator::Stat*, 4> counted(State& s) {
  return {&s.stats.active_requests, &s.stats.active_bytes, &s.stats.allocations,
          &s.stats.allocated_bytes};
}

// Never destroyed: tensors freed during interpreter shutdown still find it.
State& state() {
  static State* s = new State;
  return *s;
}

std::map<uintptr_t, Block>::iterator find_block(State& s, const void* ptr) {
  const auto address = reinterpret_cast<uintptr_t>(ptr);
  auto it = s.blocks.upper_bound(address);
  if (it == s.blocks.begin()) return s.blocks.end();
  --it;
  return address < it->first + it->second.size ? it : s.blocks.end();
}

void prune(Block& b) {
  b.transfers.erase(std::remove_if(b.transfers.begin(), b.transfers.end(),
                                   [](const std::function<bool()>& done) { return done(); }),
                    b.transfers.end());
}

// Returns a freed block with no transfer left to the system. Holds s.mutex.
std::map<uintptr_t, Block>::iterator release_if_idle(State& s,
                                                     std::map<uintptr_t, Block>::iterator it) {
  Block& b = it->second;
  prune(b);
  if (!b.freed || !b.transfers.empty()) return std::next(it);
  void* ptr = reinterpret_cast<void*>(it->first);
  if (b.dma_mapped) client().dma_unmap(ptr);
  std::free(ptr);
  s.stats.allocations.decrease(1);
  s.stats.allocated_bytes.decrease(b.size);
  s.stats.num_host_free++;
  return s.blocks.erase(it);
}

void release_idle_blocks(State& s) {
  for (auto it = s.blocks.begin(); it != s.blocks.end();) {
    it = it->second.freed ? release_if_idle(s, it) : std::next(it);
  }
}

void free_block(void* ptr) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.blocks.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == s.blocks.end()) return;
  it->second.freed = true;
  s.stats.active_requests.decrease(1);
  s.stats.active_bytes.decrease(it->second.size);
  release_if_idle(s, it);
}

struct PinnedAllocator final : at::HostAllocator {
  at::DataPtr allocate(size_t n) override {
    if (n == 0) return {nullptr, nullptr, &free_block, at::Device(at::kCPU)};
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    release_idle_blocks(s);
    const size_t size = (n + kAlignment - 1) / kAlignment * kAlignment;
    void* ptr = std::aligned_alloc(kAlignment, size);
    TORCH_CHECK(ptr != nullptr, "tpu: pinned host memory: cannot allocate ", n, " bytes");
    Block b;
    b.size = size;
    if (s.dma != State::kRefused && device_count() > 0) {
      b.dma_mapped = client().dma_map(ptr, size);
      s.dma = b.dma_mapped ? State::kMapped : State::kRefused;
    }
    s.blocks.emplace(reinterpret_cast<uintptr_t>(ptr), std::move(b));
    s.stats.allocations.increase(1);
    s.stats.allocated_bytes.increase(size);
    s.stats.active_requests.increase(1);
    s.stats.active_bytes.increase(size);
    s.stats.num_host_alloc++;
    return {ptr, ptr, &free_block, at::Device(at::kCPU)};
  }
  at::DeleterFnPtr raw_deleter() const override { return &free_block; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
  // The block waits for the work running on the stream's device now (streams share its queue).
  bool record_event(void* ptr, void*, c10::Stream stream) override {
    const auto running = client().timeline().running(stream.device_index());
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = find_block(s, ptr);
    if (it == s.blocks.end()) return false;
    prune(it->second);
    for (const auto& c : running) it->second.transfers.push_back([c] { return c->done(); });
    return true;
  }
  void empty_cache() override {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    release_idle_blocks(s);
  }
  at::HostStats get_stats() override {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.stats;
  }
  void reset_accumulated_stats() override {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (auto* stat : counted(s)) stat->reset_accumulated();
    s.stats.num_host_alloc = s.stats.num_host_free = 0;
  }
  void reset_peak_stats() override {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (auto* stat : counted(s)) stat->reset_peak();
  }
};

PinnedAllocator allocator;
at::HostAllocatorRegistry<c10::DeviceType::PrivateUse1> registry(&allocator);

}  // namespace

at::HostAllocator& pinned_allocator() { return allocator; }

bool is_pinned(const void* ptr) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = find_block(s, ptr);
  return it != s.blocks.end() && !it->second.freed;
}

void record_transfer(const void* ptr, std::function<bool()> done) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = find_block(s, ptr);
  if (it == s.blocks.end()) return;
  prune(it->second);
  it->second.transfers.push_back(std::move(done));
}

bool pinned_dma_mapped() {
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.dma != State::kUnknown) return s.dma == State::kMapped;
  }
  allocator.allocate(1);  // the first block finds out
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().dma == State::kMapped;
}

}  // namespace torch_pjrt::device

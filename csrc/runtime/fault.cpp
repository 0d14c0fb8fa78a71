// Test-only fault injection: the armed faults and their countdowns.
#include "fault.h"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "error.h"

namespace torch_pjrt::runtime {
namespace {

struct Armed {
  std::string site;
  int64_t remaining;
};

std::mutex mutex;
std::vector<Armed> armed;
std::atomic<bool> any_armed{false};

}  // namespace

void arm_fault(const std::string& site, int64_t nth) {
  if (site != "compile" && site != "execute" && site != "to_host" && site != "from_host" &&
      site != "allocate") {
    throw std::invalid_argument("inject_fault: unknown site '" + site +
                                "' (compile, execute, to_host, from_host, allocate)");
  }
  if (nth < 1) throw std::invalid_argument("inject_fault: nth must be at least 1");
  std::lock_guard<std::mutex> lock(mutex);
  armed.push_back({site, nth});
  any_armed.store(true, std::memory_order_relaxed);
}

void inject_fault(const char* site) {
  if (!any_armed.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = armed.begin(); it != armed.end(); ++it) {
    if (it->site != site || --it->remaining > 0) continue;
    const bool allocation = it->site == "allocate";
    armed.erase(it);
    any_armed.store(!armed.empty(), std::memory_order_relaxed);
    if (allocation) {
      throw PjrtError("out of memory allocating device buffers: injected fault",
                      PJRT_Error_Code_RESOURCE_EXHAUSTED);
    }
    throw PjrtError(std::string(site) + ": injected fault", PJRT_Error_Code_INTERNAL);
  }
}

}  // namespace torch_pjrt::runtime

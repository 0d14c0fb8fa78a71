// Process default and thread-scoped eager modes.
#include "aten/eager_mode.h"

#include <c10/util/Exception.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <atomic>
#include <memory>

#include "aten/torch_compat.h"
#include "graph/graph.h"

namespace torch_pjrt::aten {
namespace {

std::atomic<EagerMode> default_mode{EagerMode::Strict};

struct ScopedMode : c10::DebugInfoBase {
  explicit ScopedMode(EagerMode m) : mode(m) {}
  EagerMode mode;
};

}  // namespace

EagerMode parse_eager_mode(const std::string& name) {
  if (name == "strict") return EagerMode::Strict;
  if (name == "fused") return EagerMode::Fused;
  if (name == "debug") return EagerMode::Debug;
  TORCH_CHECK_VALUE(false, "eager mode must be \"strict\", \"fused\" or \"debug\", got \"", name,
                    "\"");
}

const char* eager_mode_name(EagerMode mode) {
  switch (mode) {
    case EagerMode::Fused:
      return "fused";
    case EagerMode::Debug:
      return "debug";
    case EagerMode::Strict:
      break;
  }
  return "strict";
}

EagerMode eager_mode() {
  if (auto* scoped = c10::ThreadLocalDebugInfo::get(compat::kEagerModeSlot)) {
    return static_cast<ScopedMode*>(scoped)->mode;
  }
  return default_mode.load(std::memory_order_relaxed);
}

void set_default_eager_mode(EagerMode mode) {
  graph::materialize();
  default_mode = mode;
}

void push_eager_mode(EagerMode mode) {
  graph::materialize();
  c10::ThreadLocalDebugInfo::_push(compat::kEagerModeSlot, std::make_shared<ScopedMode>(mode));
}

void pop_eager_mode() {
  c10::ThreadLocalDebugInfo::_pop(compat::kEagerModeSlot);
  graph::materialize();
}

}  // namespace torch_pjrt::aten

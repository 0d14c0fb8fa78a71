// Process default and thread-scoped eager modes.
#include "aten/eager_mode.h"

#include <c10/util/Exception.h>

#include <atomic>

#include "aten/thread_scoped.h"
#include "aten/torch_compat.h"
#include "graph/graph.h"

namespace torch_pjrt::aten {
namespace {

std::atomic<EagerMode> default_mode{EagerMode::Strict};

using ScopedMode = ThreadScoped<EagerMode, &compat::kEagerModeSlot>;

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
  if (const EagerMode* scoped = ScopedMode::get()) return *scoped;
  return default_eager_mode();
}

EagerMode default_eager_mode() { return default_mode.load(std::memory_order_relaxed); }

void set_default_eager_mode(EagerMode mode) {
  graph::materialize();
  default_mode = mode;
}

void push_eager_mode(EagerMode mode) {
  graph::materialize();
  ScopedMode::push(mode);
}

void pop_eager_mode() {
  ScopedMode::pop();
  graph::materialize();
}

}  // namespace torch_pjrt::aten

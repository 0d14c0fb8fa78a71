// Trace mode state (thread-local) and the generator draw shared by random ops and replays.
#include "aten/trace.h"

#include <mutex>

#include "graph/trace_mode.h"

namespace torch_pjrt::aten::trace {
namespace {
thread_local std::vector<RandomOperand> random_operands;
}  // namespace

bool active() { return graph::trace_active(); }

void begin() {
  graph::set_trace_active(true);
  random_operands.clear();
}

std::vector<RandomOperand> end() {
  graph::set_trace_active(false);
  std::vector<RandomOperand> out;
  out.swap(random_operands);
  return out;
}

void note_random(const graph::DataPtr& leaf, int64_t words, bool default_generator) {
  if (active()) random_operands.push_back({leaf, words, default_generator});
}

void draw_random_state(device::Generator* g, int64_t words, int64_t state[2]) {
  std::lock_guard<std::mutex> lock(g->mutex_);
  // The offset counts 32-bit words; programs consume whole 4-word Philox blocks.
  const uint64_t first = (g->get_offset() + 3) / 4;
  state[0] = static_cast<int64_t>(g->current_seed());
  state[1] = static_cast<int64_t>(first);
  g->set_offset((first + static_cast<uint64_t>(words + 3) / 4) * 4);
}

}  // namespace torch_pjrt::aten::trace

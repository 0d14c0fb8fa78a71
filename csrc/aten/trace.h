// Trace mode for compiled graphs (torch.compile backend "tpu"): while a trace is active on this
// thread, kernels only record, and random ops report the (seed, offset) operands they upload so
// that a replay can draw fresh ones. (Device-side checks become outputs of the graph's program.)
#pragma once

#include <cstdint>
#include <vector>

#include "device/generator.h"
#include "graph/node.h"

namespace torch_pjrt::aten::trace {

// A random op's uploaded i64[2] (seed, offset) operand and the 32-bit words it consumes.
struct RandomOperand {
  graph::DataPtr leaf;
  int64_t words = 0;
  bool default_generator = true;  // false: an explicit generator, which a replay cannot re-draw
};

bool active();
void begin();
// Ends the trace and returns the random operands recorded while it was active.
std::vector<RandomOperand> end();

// Called by random ops: remembers `leaf` when a trace is active.
void note_random(const graph::DataPtr& leaf, int64_t words, bool default_generator);

// Draws (seed, first Philox block) for an op consuming `words` 32-bit words from `g` and advances
// its offset past them (whole 4-word blocks), under the generator's mutex.
void draw_random_state(device::Generator* g, int64_t words, int64_t state[2]);

}  // namespace torch_pjrt::aten::trace

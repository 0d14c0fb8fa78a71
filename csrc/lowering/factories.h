// Lowerings of range factories. Output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Rank-1: element i = start + i * step, with (start, step) = ints[0..1] for integer outputs
// (i64 arithmetic) or floats[0..1] (f64 arithmetic, f32 for 16-bit floats). No operands.
extern const graph::OpDef kArange;
// Rank-1 with n >= 2 elements from floats[0] (start) to floats[1] (end) as PyTorch's CPU kernel
// computes it: step = (end - start) / (n - 1); the first half counts up from start, the second
// down from end. Computed in the output type (f64 for integer outputs, then truncated). No
// operands.
extern const graph::OpDef kLinspace;
// Rank-2 identity pattern: 1 where row == column, 0 elsewhere. No operands.
extern const graph::OpDef kEye;

}  // namespace torch_pjrt::lowering

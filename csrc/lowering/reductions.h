// Reduction lowerings over a list of dimensions. Each entry's comment gives its operands and
// attributes; output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Reductions of operand 0 over dims ints (converted to the output type first); the output dims say
// whether reduced dims are kept as size 1.
extern const graph::OpDef kSum;
extern const graph::OpDef kMean;
// Max/min over dims ints; NaN propagates as in PyTorch.
extern const graph::OpDef kAmax;
extern const graph::OpDef kAmin;

}  // namespace torch_pjrt::lowering

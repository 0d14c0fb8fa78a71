// Indexing lowerings. Each entry's comment gives its operands and attributes; output types always
// come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Gathers elements of operand 0 (any shape, read row-major) at the i64 positions of operand 1.
extern const graph::OpDef kTake;

}  // namespace torch_pjrt::lowering

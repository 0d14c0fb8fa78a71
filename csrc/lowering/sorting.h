// Sorting lowerings.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Stable sort of operand 0 along dim ints[0], descending when ints[1] != 0; NaN sorts as the
// largest value. Outputs (values, int64 indices), each the leading slice along dim of the output
// dims (topk asks for fewer than all).
extern const graph::OpDef kSort;

}  // namespace torch_pjrt::lowering

// Scan lowerings: cumulative sums and products along one dimension.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Inclusive cumulative sum / product of operand 0 (converted to the output type) along dim ints[0].
extern const graph::OpDef kCumsum;
extern const graph::OpDef kCumprod;

}  // namespace torch_pjrt::lowering

// Reflection and replication padding over the trailing spatial dimensions, as gathers of
// precomputed source positions, and their gradients as scatter-adds. Output types always come from
// the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

enum PadMode : int64_t { kPadReflect = 0, kPadReplicate = 1 };

// Operand x; attrs ints: nd, mode (PadMode), then the padding before each spatial dim (nd values,
// outermost first; negative crops). The output's spatial dims give the padding after.
extern const graph::OpDef kIndexPad;
// Operand grad_output (dims of the padded output); attrs as kIndexPad; output type is the input's.
extern const graph::OpDef kIndexPadBackward;

}  // namespace torch_pjrt::lowering

// Lowerings that create values: constant fills and element type conversion. Each entry's comment
// gives its operands and attributes; output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Creation: every element equal to floats[0], or to ints[0] (exact for integer types). No operands.
extern const graph::OpDef kFill;
// Operand 0 converted to the output element type and broadcast to the output dims. Conversions to
// and from the float8 formats give the CPU's results (see to_float8 and from_float8).
extern const graph::OpDef kConvert;

}  // namespace torch_pjrt::lowering

// Shape lowerings: concatenation, flips, rolls, triangles and constant padding. Each entry's
// comment gives its operands and attributes; output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Operands converted to the output element type and concatenated along dimension ints[0].
extern const graph::OpDef kConcat;
// Operand 0 reversed along the dimensions in ints.
extern const graph::OpDef kFlip;
// Operand 0 rolled: ints are (dim, shift) pairs with 0 <= shift < size(dim).
extern const graph::OpDef kRoll;
// tril (ints[0] == 0) or triu (ints[0] == 1) of operand 0 over its last two dims, keeping the
// diagonal ints[1] and those below (tril) or above (triu).
extern const graph::OpDef kTriangle;
// Operand 0 padded with the rank-0 operand 1: ints are (low, high) pairs per dimension, negative
// values crop.
extern const graph::OpDef kPad;

}  // namespace torch_pjrt::lowering

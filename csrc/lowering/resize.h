// Interpolation lowerings (nearest and linear, over the trailing nd spatial dimensions). Each
// entry's comment gives its operands and attributes; output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Nearest upsampling: operand x; attrs ints: nd; floats: the scale of each spatial dim (0 when
// absent, then in/out is used). Source index floor(o * scale), as PyTorch's "nearest" mode.
extern const graph::OpDef kUpsampleNearest;
// Operand grad_output; attrs as kUpsampleNearest; output type is the input's.
extern const graph::OpDef kUpsampleNearestBackward;
// Linear/bilinear/trilinear upsampling: operand x; attrs ints: nd, align_corners; floats: scales
// as kUpsampleNearest.
extern const graph::OpDef kUpsampleLinear;
// Operand grad_output; attrs as kUpsampleLinear; output type is the input's.
extern const graph::OpDef kUpsampleLinearBackward;

}  // namespace torch_pjrt::lowering

// Interpolation lowerings (nearest, linear and cubic, over the trailing nd spatial dimensions).
// Each entry's comment gives its operands and attributes; output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Nearest upsampling: operand x; attrs ints: nd, then 1 for "nearest-exact" (optional); floats:
// the scale of each spatial dim (0 when absent, then in/out is used). Source index
// floor(o * scale) as PyTorch's "nearest" mode, floor((o + 0.5) * scale) for "nearest-exact".
extern const graph::OpDef kUpsampleNearest;
// Operand grad_output; attrs as kUpsampleNearest; output type is the input's.
extern const graph::OpDef kUpsampleNearestBackward;
// Linear/bilinear/trilinear upsampling: operand x; attrs ints: nd, align_corners, then 1 for
// bicubic (optional: four taps per axis with PyTorch's cubic coefficients); floats: scales as
// kUpsampleNearest.
extern const graph::OpDef kUpsampleLinear;
// Operand grad_output; attrs as kUpsampleLinear; output type is the input's.
extern const graph::OpDef kUpsampleLinearBackward;
// Separable bilinear/bicubic resampling as the CPU's uint8 and antialiased kernels
// (resize_separable): operand x; attrs ints: nd, align_corners, cubic, antialias; floats: scales as
// kUpsampleNearest. uint8 computes with int16 fixed-point weights, rounding and clamping after each
// axis.
extern const graph::OpDef kUpsampleSeparable;
// Operand grad_output (float types); attrs as kUpsampleSeparable; output type is the input's.
extern const graph::OpDef kUpsampleSeparableBackward;

}  // namespace torch_pjrt::lowering

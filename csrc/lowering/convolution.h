// Convolution lowerings (1d/2d/3d, strided, padded, dilated, grouped, transposed). Each entry's
// comment gives its operands and attributes; output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Operands input [N, C, S...], weight, optional bias [Cout]; attrs ints: transposed, groups, then
// stride, padding, dilation (one per spatial dim each), optionally the hlo::Precision. Weight is
// [Cout, C/groups, K...], or [C, Cout/groups, K...] when transposed. The output spatial size comes
// from the output type, which is how a transposed convolution's output_padding arrives.
extern const graph::OpDef kConvolution;
// Operands grad_output, input, weight; attrs ints as kConvolution followed by the output mask
// (grad_input, grad_weight, grad_bias as 0/1), then optionally the precision. One output per
// requested gradient, in that order.
extern const graph::OpDef kConvolutionBackward;

}  // namespace torch_pjrt::lowering

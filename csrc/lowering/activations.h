// Activation lowerings and their backward ops, with PyTorch's CPU formulas. Operands are converted
// to the output type (f16/bf16 compute in f32) and broadcast; each entry gives its attributes.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// gelu(x), gelu_backward(grad, x): ints[0] = 1 for the tanh approximation.
extern const graph::OpDef kGelu;
extern const graph::OpDef kGeluBackward;
extern const graph::OpDef kSilu;
// sigmoid_backward(grad, output), tanh_backward(grad, output).
extern const graph::OpDef kSigmoidBackward;
extern const graph::OpDef kTanhBackward;
// softplus(x), softplus_backward(grad, x): floats = {beta, threshold}.
extern const graph::OpDef kSoftplus;
extern const graph::OpDef kSoftplusBackward;
// elu(x): floats = {alpha, scale, input_scale}. elu_backward(grad, self_or_result): the same
// floats; ints[0] = 1 when the second operand is elu's result.
extern const graph::OpDef kElu;
extern const graph::OpDef kEluBackward;
// leaky_relu(x), leaky_relu_backward(grad, x): floats[0] = negative slope.
extern const graph::OpDef kLeakyRelu;
extern const graph::OpDef kLeakyReluBackward;
extern const graph::OpDef kHardswish;
extern const graph::OpDef kHardswishBackward;  // (grad, x)
extern const graph::OpDef kHardsigmoid;
extern const graph::OpDef kHardsigmoidBackward;  // (grad, x)
// hardtanh_backward(grad, x): floats = {min, max}.
extern const graph::OpDef kHardtanhBackward;
// log_sigmoid_forward(x): outputs {output, buffer}; log_sigmoid_backward(grad, x, buffer).
extern const graph::OpDef kLogSigmoidForward;
extern const graph::OpDef kLogSigmoidBackward;
extern const graph::OpDef kMish;
// threshold(x): floats = {threshold, value}.
extern const graph::OpDef kThreshold;
// softshrink(x): floats[0] = lambda. shrink(x) or shrink(grad, x): the first operand where x lies
// outside [-lambda, lambda] (floats[0]), else 0 (hardshrink and both shrink backward ops).
extern const graph::OpDef kSoftshrink;
extern const graph::OpDef kShrink;

}  // namespace torch_pjrt::lowering

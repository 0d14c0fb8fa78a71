// Normalization lowerings: batch, layer, group and RMS norm, forward and backward. Each entry's
// comment gives its operands and attributes; output types always come from the caller. Statistics
// are computed in float32 for float16/bfloat16 inputs, else in the input type.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Batch norm in training over input [N, C, ...]: operands input, then weight, bias, running_mean,
// running_var [C] each when ints {has_weight, has_bias, has_running} say so; floats {eps,
// momentum}. Outputs: output, save_mean, save_invstd, then (with running stats) the updated
// running_mean and running_var (momentum, unbiased variance).
extern const graph::OpDef kBatchNormTrain;
// Batch norm with running statistics: operands input, running_mean, running_var, then weight and
// bias when ints {has_weight, has_bias} say so; floats {eps}. Output: output.
extern const graph::OpDef kBatchNormEval;
// Operands grad_out, input, mean, invstd-or-var [C], then weight when ints[0] (has_weight); ints[1]
// (train): whether operand 3 is the saved invstd (else the running variance, with floats[0] eps).
// Outputs grad_input, grad_weight, grad_bias.
extern const graph::OpDef kBatchNormBackward;

// Layer norm over the dims from ints[0] (axis) on: operands input, then weight and bias (the
// normalized shape) when ints {axis, has_weight, has_bias} say so; floats {eps}. Outputs output,
// mean, rstd (input dims up to axis, then 1s).
extern const graph::OpDef kLayerNorm;
// Operands grad_out, input, mean, rstd, then weight when ints[1]; ints[0] axis. Outputs grad_input,
// grad_weight, grad_bias.
extern const graph::OpDef kLayerNormBackward;

// Group norm of input [N, C, ...] in ints[0] groups: operands input, then weight and bias [C] when
// ints {groups, has_weight, has_bias} say so; floats {eps}. Outputs output, mean, rstd [N, groups].
extern const graph::OpDef kGroupNorm;
// Operands grad_out, input, mean, rstd, then weight when ints[1]; ints[0] groups. Outputs
// grad_input, grad_weight, grad_bias.
extern const graph::OpDef kGroupNormBackward;

// RMS norm over the dims from ints[0] (axis) on: operands input, then weight when ints[1]; floats
// {eps}. Outputs output, rstd (input dims up to axis, then 1s).
extern const graph::OpDef kRmsNorm;
// Operands grad_out, input, rstd, then weight when ints[1]; ints[0] axis. Outputs grad_input,
// grad_weight.
extern const graph::OpDef kRmsNormBackward;

}  // namespace torch_pjrt::lowering

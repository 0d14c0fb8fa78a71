// Optimizer updates recorded as one operation per parameter, so an optimizer step records a node
// per parameter instead of a few dozen elementwise ops.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// One parameter's step of PyTorch's fused Adam/AdamW (torch.optim.Adam/AdamW(fused=True)), in the
// operands' op-math type (float32 for float16/bfloat16). Operands: param, grad, exp_avg,
// exp_avg_sq, step (rank 0), then rank-0 scalars lr, decay (AdamW: 1 - lr * weight_decay; Adam:
// weight_decay; absent when weight_decay is 0), beta1, beta2, 1 - beta1, 1 - beta2, eps, then
// max_exp_avg_sq (amsgrad), grad_scale and found_inf when present. ints: {amsgrad, maximize,
// decoupled, has weight decay, has grad_scale, has found_inf}. Results: param, exp_avg, exp_avg_sq,
// then max_exp_avg_sq (amsgrad) and the unscaled grad (grad_scale), each in its operand's type;
// each keeps its old value where found_inf != 0.
extern const graph::OpDef kAdamStep;

}  // namespace torch_pjrt::lowering

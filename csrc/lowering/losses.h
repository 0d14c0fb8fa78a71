// Loss lowerings (negative log likelihood, pointwise regression and binary cross entropy losses)
// and embedding's gradient. Each entry's comment gives its operands and attributes; output types
// always come from the caller. Float16/bfloat16 compute in float32.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Loss reductions, numbered as at::Reduction: none, mean, sum.
enum LossReduction : int64_t { kReduceNone = 0, kReduceMean = 1, kReduceSum = 2 };

// nll_loss over input with classes along dim ints[0] and integer target (the input's dims without
// the class dim): operands input, target, then weight [C] when ints[3]; ints {class_dim,
// reduction, ignore_index, has_weight}. Outputs output, total_weight.
extern const graph::OpDef kNllLoss;
// Operands grad_output, target, total_weight, then weight when ints[3]; ints as kNllLoss. Output:
// the gradient with the input's type.
extern const graph::OpDef kNllLossBackward;

// Pointwise losses between input and target of equal dims (then weight of those dims for binary
// cross entropy when ints[2]): ints {kind, reduction, has_weight}, floats[0] the beta (smooth L1)
// or delta (Huber).
enum PointwiseLoss : int64_t { kMse = 0, kSmoothL1 = 1, kHuber = 2, kBinaryCrossEntropy = 3 };
extern const graph::OpDef kPointwiseLoss;
// Operands grad_output, input, target, then weight when ints[2]; attributes as kPointwiseLoss.
// Output: the gradient with respect to input.
extern const graph::OpDef kPointwiseLossBackward;

// embedding_dense_backward: operands grad_output [..., D] and integer indices (grad_output's dims
// without the last); ints {num_weights, padding_idx (-1 for none), scale_grad_by_freq}. Output
// [num_weights, D]: the gradient rows summed per index.
extern const graph::OpDef kEmbeddingBackward;

}  // namespace torch_pjrt::lowering

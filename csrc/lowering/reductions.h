// Reduction lowerings over a list of dimensions. Each entry's comment gives its operands and
// attributes; output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Reductions of operand 0 over dims ints (converted to the output type first); the output dims say
// whether reduced dims are kept as size 1.
extern const graph::OpDef kSum;
extern const graph::OpDef kMean;
extern const graph::OpDef kProd;
// Max/min over dims ints; NaN propagates as in PyTorch.
extern const graph::OpDef kAmax;
extern const graph::OpDef kAmin;
// Max/min along dim ints[0] (no ints: the flattened input): outputs (values, int64 indices), or
// the indices alone when one output type is given. First index among ties; NaN wins.
extern const graph::OpDef kMaxDim;
extern const graph::OpDef kMinDim;
// Variance / standard deviation over dims ints with correction floats[0], in the output type; a
// second output type adds the mean.
extern const graph::OpDef kVar;
extern const graph::OpDef kStd;
// Vector norm of order floats[0] (inf, -inf, 0, or any p) over dims ints, in the output type.
extern const graph::OpDef kVectorNorm;
// Numerically stable log(sum(exp(x))) over dims ints.
extern const graph::OpDef kLogsumexp;
// all/any over dims ints (elements tested against zero); output bool or uint8.
extern const graph::OpDef kAll;
extern const graph::OpDef kAny;
// hash_tensor mode 0 over dims ints: the elements widened to f64 (floats) or 64-bit integers
// (sign- or zero-extended), their bits xor-reduced as u64.
extern const graph::OpDef kHashTensor;
// softmax / log_softmax of operand 0 along dim ints[0], in the output type.
extern const graph::OpDef kSoftmax;
extern const graph::OpDef kLogSoftmax;
// _safe_softmax along dim ints[0]: softmax, with 0 for rows that are all -inf.
extern const graph::OpDef kSafeSoftmax;
// Their gradients from (grad_output, output) along dim ints[0].
extern const graph::OpDef kSoftmaxBackward;
extern const graph::OpDef kLogSoftmaxBackward;

}  // namespace torch_pjrt::lowering

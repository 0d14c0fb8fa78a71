// The lowering table: one OpDef per operation family, shared by every execution path. Each entry's
// comment gives its operands and attributes; output types always come from the caller.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Creation: every element equal to floats[0], or to ints[0] (exact for integer types). No operands.
extern const graph::OpDef kFill;
// Operand 0 converted to the output element type and broadcast to the output dims.
extern const graph::OpDef kConvert;

// Views over a storage (operand 0, row-major, any shape). ints: view_attrs(...).
// kViewRead: the view's elements, dims = sizes. kViewWrite: operand 0 with the view's elements
// replaced by operand 1 (dims = sizes, same element type); result has operand 0's type.
extern const graph::OpDef kViewRead;
extern const graph::OpDef kViewWrite;
graph::Attrs view_attrs(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides,
                        int64_t offset);

// Elementwise binary ops. Operands are converted to the compute type (ints[0] when present, else
// the output type) and broadcast PyTorch-style to the output dims. kAdd/kSub: floats[0], when
// present, is alpha (lhs + alpha * rhs).
extern const graph::OpDef kAdd;
extern const graph::OpDef kSub;
extern const graph::OpDef kMul;
extern const graph::OpDef kDiv;
extern const graph::OpDef kMaximum;
extern const graph::OpDef kMinimum;
// Comparisons: bool output, ints[0] is the compute type.
extern const graph::OpDef kEq;
extern const graph::OpDef kNe;
extern const graph::OpDef kLt;
extern const graph::OpDef kLe;
extern const graph::OpDef kGt;
extern const graph::OpDef kGe;
// where(cond, a, b): operand 0 bool, all broadcast to the output dims.
extern const graph::OpDef kWhere;

// Elementwise unary ops on an operand converted to the output type.
extern const graph::OpDef kNeg;
extern const graph::OpDef kAbs;
extern const graph::OpDef kCeil;
extern const graph::OpDef kFloor;
extern const graph::OpDef kExp;
extern const graph::OpDef kLog;
extern const graph::OpDef kSqrt;
extern const graph::OpDef kRsqrt;
extern const graph::OpDef kTanh;
extern const graph::OpDef kSigmoid;
extern const graph::OpDef kSin;
extern const graph::OpDef kCos;
// Bitwise (logical for bool) binary ops on operands of the output type.
extern const graph::OpDef kBitwiseAnd;
extern const graph::OpDef kBitwiseOr;
extern const graph::OpDef kBitwiseXor;
extern const graph::OpDef kRelu;
// threshold_backward(grad, self): grad where self > floats[0], else 0.
extern const graph::OpDef kThresholdBackward;

// Batched matrix product: operands [B..., M, K] and [B..., K, N] with equal batch dims.
extern const graph::OpDef kMatmul;
// addmm(self, m1, m2) = floats[0] * self + floats[1] * (m1 @ m2); self broadcast to [M, N].
extern const graph::OpDef kAddmm;

// Reductions of operand 0 over dims ints (converted to the output type first); the output dims say
// whether reduced dims are kept as size 1.
extern const graph::OpDef kSum;
extern const graph::OpDef kMean;
// Max/min over dims ints; NaN propagates as in PyTorch.
extern const graph::OpDef kAmax;
extern const graph::OpDef kAmin;

// Gathers elements of operand 0 (any shape, read row-major) at the i64 positions of operand 1.
extern const graph::OpDef kTake;

}  // namespace torch_pjrt::lowering

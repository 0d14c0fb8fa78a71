// Elementwise lowerings: arithmetic, comparisons, where, unary math, bitwise, activations. Each
// entry's comment gives its operands and attributes; output types always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

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

}  // namespace torch_pjrt::lowering

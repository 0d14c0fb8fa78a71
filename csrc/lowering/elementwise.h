// Elementwise lowerings: arithmetic, comparisons, where, unary math, bitwise, activations. Each
// entry's comment gives its operands and attributes; output types always come from the caller.
#pragma once

#include <vector>

#include "graph/node.h"
#include "lowering/common.h"

namespace torch_pjrt::lowering {

// Arithmetic on values of one type and shape, for lowerings composed of several ops.
struct Math {
  hlo::Builder& b;
  hlo::ElementType t;
  std::vector<int64_t> dims;

  hlo::Value c(double v) const;  // a constant of this type and shape
  hlo::Value add(hlo::Value x, hlo::Value y) const { return b.binary("add", x, y); }
  hlo::Value sub(hlo::Value x, hlo::Value y) const { return b.binary("subtract", x, y); }
  hlo::Value mul(hlo::Value x, hlo::Value y) const { return b.binary("multiply", x, y); }
  hlo::Value div(hlo::Value x, hlo::Value y) const { return b.binary("divide", x, y); }
  // NaN-propagating maximum and minimum (the plugin's may drop NaN).
  hlo::Value max(hlo::Value x, hlo::Value y) const;
  hlo::Value min(hlo::Value x, hlo::Value y) const;
  hlo::Value un(const char* op, hlo::Value x) const { return b.unary(op, x); }
  hlo::Value cmp(hlo::Cmp d, hlo::Value x, hlo::Value y) const { return b.compare(d, x, y); }
  hlo::Value sel(hlo::Value p, hlo::Value x, hlo::Value y) const { return b.select(p, x, y); }
  hlo::Value isnan(hlo::Value x) const { return cmp(hlo::Cmp::NE, x, x); }
  hlo::Value trunc(hlo::Value x) const;
  hlo::Value erf(hlo::Value x) const;   // within a few ulp, for f32 and f64
  hlo::Value erfc(hlo::Value x) const;  // 1 - erf(x) without its cancellation for large x
};

// The type float math on `t` computes in: f32 for f16 and bf16 (as PyTorch's CPU kernels do).
hlo::ElementType math_type(hlo::ElementType t);

// A lowering computed by `f` on Math: operands rounded to the compute type (ints[0] when present,
// else the output type), widened to its math_type and broadcast to the output dims; the result
// converted to the output type.
using MathFn = hlo::Value (*)(const Math&, const std::vector<hlo::Value>&, const graph::Attrs&);
std::vector<hlo::Value> lower_math(MathFn f, hlo::Builder& b, const std::vector<hlo::Value>& in,
                                   const graph::Attrs& attrs,
                                   const std::vector<hlo::TensorType>& outs);

// A unary MathFn computing F in f64 (functions whose f32 evaluation loses accuracy), the result
// rounded once to the output type.
template <hlo::Value (*F)(const Math&, hlo::Value)>
hlo::Value in_f64(const Math& m, const std::vector<hlo::Value>& x, const graph::Attrs&) {
  if (m.t == hlo::ElementType::F64) return F(m, x[0]);
  const Math wide{m.b, hlo::ElementType::F64, m.dims};
  return to_type(m.b, F(wide, to_type(m.b, x[0], hlo::ElementType::F64)), m.t);
}

// Elementwise binary ops. Operands are converted to the compute type (ints[0] when present, else
// the output type) and broadcast PyTorch-style to the output dims. kAdd/kSub: a third operand,
// when present, is alpha (lhs + alpha * rhs).
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

// More elementwise ops with PyTorch's CPU semantics. Operands are converted to the compute type
// (ints[0] when present, else the output type; f16/bf16 compute in f32) and broadcast.
// Binary: remainder (sign of the divisor), fmod (sign of the dividend), floor and trunc division,
// pow, atan2, fmax/fmin (NaN ignored), logical and/or/xor (bool output).
extern const graph::OpDef kRemainder;
extern const graph::OpDef kFmod;
extern const graph::OpDef kFloorDivide;
extern const graph::OpDef kTruncDivide;
extern const graph::OpDef kPow;
extern const graph::OpDef kAtan2;
extern const graph::OpDef kFmax;
extern const graph::OpDef kFmin;
extern const graph::OpDef kLogicalAnd;
extern const graph::OpDef kLogicalOr;
extern const graph::OpDef kLogicalXor;
// clamp(x, lo, hi), clamp_min(x, lo), clamp_max(x, hi): NaN in any operand propagates.
extern const graph::OpDef kClamp;
extern const graph::OpDef kClampMin;
extern const graph::OpDef kClampMax;
// lerp(self, end, weight).
extern const graph::OpDef kLerp;
// addcmul/addcdiv(self, t1, t2, value): self + value * t1 * t2 (or / t2).
extern const graph::OpDef kAddcmul;
extern const graph::OpDef kAddcdiv;
// Unary. logical_not and isnan give bool; nan_to_num replaces NaN, +inf, -inf with floats[0..2];
// round_decimals rounds to floats[0] decimal places.
extern const graph::OpDef kLogicalNot;
extern const graph::OpDef kBitwiseNot;
extern const graph::OpDef kIsnan;
extern const graph::OpDef kNanToNum;
extern const graph::OpDef kSign;
extern const graph::OpDef kSignbit;
extern const graph::OpDef kReciprocal;
extern const graph::OpDef kTrunc;
extern const graph::OpDef kRound;
extern const graph::OpDef kRoundDecimals;
extern const graph::OpDef kFrac;
extern const graph::OpDef kErf;
extern const graph::OpDef kErfinv;
extern const graph::OpDef kExpm1;
extern const graph::OpDef kLog1p;
extern const graph::OpDef kLog2;
extern const graph::OpDef kLog10;
extern const graph::OpDef kExp2;
extern const graph::OpDef kTan;
extern const graph::OpDef kAsin;
extern const graph::OpDef kAcos;
extern const graph::OpDef kAtan;
extern const graph::OpDef kSinh;
extern const graph::OpDef kCosh;
extern const graph::OpDef kAsinh;
extern const graph::OpDef kAcosh;
extern const graph::OpDef kAtanh;

}  // namespace torch_pjrt::lowering

// Lowerings specific to complex element types: building complex values from parts, taking them
// apart, conjugation, magnitude and phase. Output types come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// complex(re, im): operands converted to the output's part type and broadcast to its dims.
extern const graph::OpDef kComplex;
// polar(abs, angle) = abs * (cos(angle) + i sin(angle)), broadcast like kComplex.
extern const graph::OpDef kPolar;
// The real and imaginary parts of a complex operand (a real operand's imag part is zero).
extern const graph::OpDef kReal;
extern const graph::OpDef kImag;
// complex32 storage: a complex64 value from float16 (re, im) pairs (operand dims [..., 2]), and a
// complex64 value rounded to such pairs (output dims [..., 2]).
extern const graph::OpDef kComplexFromHalfPairs;
extern const graph::OpDef kComplexToHalfPairs;
// Complex conjugate (re, -im).
extern const graph::OpDef kConj;
// |z| of a complex operand, in the output's real type.
extern const graph::OpDef kComplexAbs;
// angle: atan2(im, re) for complex operands; for real ones pi for negative values, NaN for NaN,
// else 0 (PyTorch's angle of a real number).
extern const graph::OpDef kAngle;
// sgn(z) = z / |z|, 0 where z == 0.
extern const graph::OpDef kComplexSgn;
// isfinite / isnan of a complex operand: both parts finite / either part NaN (bool output).
extern const graph::OpDef kComplexIsFinite;
extern const graph::OpDef kComplexIsNan;

// Unary math of complex operands without a StableHLO complex op (complex_math.cpp), on the
// principal branches of C++'s std::complex functions; output type = the operand's.
extern const graph::OpDef kComplexAsin;
extern const graph::OpDef kComplexAcos;
extern const graph::OpDef kComplexAtan;
extern const graph::OpDef kComplexAsinh;
extern const graph::OpDef kComplexAcosh;
extern const graph::OpDef kComplexAtanh;
extern const graph::OpDef kComplexSinh;
extern const graph::OpDef kComplexCosh;
extern const graph::OpDef kComplexLog2;
extern const graph::OpDef kComplexLog10;
extern const graph::OpDef kComplexExp2;
// sqrt and log1p with C's signed zeros and no underflow near log1p's singularity at -1.
extern const graph::OpDef kComplexSqrt;
extern const graph::OpDef kComplexLog1p;
// exp, expm1 and tanh keeping the sign of a zero imaginary part on the real axis; reciprocal and
// rsqrt by PyTorch's complex division.
extern const graph::OpDef kComplexExp;
extern const graph::OpDef kComplexExpm1;
extern const graph::OpDef kComplexTanh;
extern const graph::OpDef kComplexReciprocal;
extern const graph::OpDef kComplexRsqrt;
// logaddexp of two complex operands (broadcast to the output's dims).
extern const graph::OpDef kComplexLogaddexp;

}  // namespace torch_pjrt::lowering

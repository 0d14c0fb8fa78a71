// Elementwise math beyond the basics: sign and magnitude (copysign, hypot), log-sum-exp pairs,
// x*log(y) forms, heaviside, sinc, logit, erfc, and bit shifts. Operands are converted to the
// compute type (ints[0] when present, else the output type; f32 for f16/bf16) and broadcast to the
// output dims, as the elementwise ops in elementwise.h are.
#pragma once

#include "graph/node.h"
#include "lowering/elementwise.h"

namespace torch_pjrt::lowering {

// (x, y): |x| with the sign of y, including -0 and the sign of NaN.
extern const graph::OpDef kCopysign;
// (x, y): sqrt(x^2 + y^2) without overflow or underflow in the squares; inf if either is inf.
extern const graph::OpDef kHypot;
// (a, b): log(exp(a) + exp(b)) and log2(2^a + 2^b), exact for equal infinities.
extern const graph::OpDef kLogaddexp;
extern const graph::OpDef kLogaddexp2;
// log(exp(a) + exp(b)) on Math, for lowerings that combine values this way (logcumsumexp).
hlo::Value log_add_exp(const Math& m, hlo::Value a, hlo::Value b);
// (x, y): x * log(y) and x * log1p(y); 0 where x == 0 unless y is NaN.
extern const graph::OpDef kXlogy;
extern const graph::OpDef kXlog1py;
// (x, values): values where x == 0, else x > 0.
extern const graph::OpDef kHeaviside;
// (x): sin(pi x) / (pi x), 1 at 0.
extern const graph::OpDef kSinc;
// (x): log(x / (1 - x)); floats = {eps} clamps x to [eps, 1 - eps] first.
extern const graph::OpDef kLogit;
// (x): 1 - erf(x), computed in f64 for f32 and narrower so small results keep their precision.
extern const graph::OpDef kErfc;
// (x): log|gamma(x)| and its derivative digamma, in f64 for f32 and narrower (PyTorch's poles:
// lgamma +inf at 0 and the negative integers; digamma -inf at +0, +inf at -0, NaN at the negative
// integers).
extern const graph::OpDef kLgamma;
extern const graph::OpDef kDigamma;
// log|gamma(x)| on Math (full precision in f64), for lowerings built on it.
hlo::Value log_gamma(const Math& m, hlo::Value x);
// (a, shift): PyTorch's shifts: a shift outside [0, bits) gives 0 (left) or the sign fill (right).
extern const graph::OpDef kShiftLeft;
extern const graph::OpDef kShiftRight;

}  // namespace torch_pjrt::lowering

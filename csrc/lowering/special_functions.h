// PyTorch's torch.special functions (and their aten relatives) as elementwise StableHLO: the
// orthogonal polynomials, and more families as they are added. Operands are converted to the
// output type (f32 for f16/bf16) and broadcast to the output dims, as in elementwise.h.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (x, n): the polynomial of degree trunc(n) at x, by the three-term recurrence in a while loop
// bounded by the largest degree that needs it (closed forms where PyTorch's kernels use them:
// |x| == 1, and the trigonometric forms of the Chebyshev kinds for |x| < 1 and large n). 0 for
// n < 0, NaN n and n outside int64, as PyTorch's integer cast gives.
extern const graph::OpDef kChebyshevT;
extern const graph::OpDef kChebyshevU;
extern const graph::OpDef kChebyshevV;
extern const graph::OpDef kChebyshevW;
extern const graph::OpDef kShiftedChebyshevT;
extern const graph::OpDef kShiftedChebyshevU;
extern const graph::OpDef kShiftedChebyshevV;
extern const graph::OpDef kShiftedChebyshevW;
extern const graph::OpDef kHermiteH;
extern const graph::OpDef kHermiteHe;
extern const graph::OpDef kLaguerreL;
extern const graph::OpDef kLegendreP;

// (x): the modified Bessel functions of the first kind I0, I1 and their exponentially scaled
// forms exp(-|x|) I(x), in f64 (the power series up to |x| = 30, the asymptotic series beyond).
extern const graph::OpDef kI0;
extern const graph::OpDef kI0e;
extern const graph::OpDef kI1;
extern const graph::OpDef kI1e;
// (x, y): the next float after x towards y, stepping in the output type's own bits (f16 and
// bf16 included); y where x == y, NaN if either is NaN.
extern const graph::OpDef kNextafter;
// (x): -x log(x) for x > 0, 0 at 0, -inf below 0.
extern const graph::OpDef kEntr;
// (a, b) on integers: the greatest common divisor by Euclid's algorithm in a while loop (until
// every element is done), non-negative; lcm |a / gcd * b|, 0 where gcd is 0.
extern const graph::OpDef kGcd;
extern const graph::OpDef kLcm;

}  // namespace torch_pjrt::lowering

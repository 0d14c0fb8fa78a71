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

}  // namespace torch_pjrt::lowering

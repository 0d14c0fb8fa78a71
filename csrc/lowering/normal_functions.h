// The scaled complementary error function and the standard normal distribution's log-CDF and
// quantile as elementwise StableHLO, computed in f64 and rounded once to the output type.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (x): exp(x^2) erfc(x); inf once exp(x^2) overflows for x < 0, the continued fraction of erfc
// without its Gaussian factor for x >= 2 (so no underflow for large x).
extern const graph::OpDef kErfcx;
// (x): log(Phi(x)) = log(erfc(-x / sqrt 2) / 2), as -x^2/2 - log(...) from erfc's continued
// fraction for x <= -2 sqrt 2 (finite until x^2 overflows), log1p(-erfc(x / sqrt 2) / 2) for x >=
// 0.
extern const graph::OpDef kLogNdtr;
// (p): the x with Phi(x) = p: an asymptotic first guess refined by Newton steps on log(Phi); -inf
// at 0, inf at 1, NaN outside [0, 1].
extern const graph::OpDef kNdtri;

}  // namespace torch_pjrt::lowering

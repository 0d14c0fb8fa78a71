// Relatives of the gamma function as elementwise StableHLO, computed in f64 and rounded once: the
// Hurwitz zeta function, polygamma through it, and the regularized incomplete gamma functions.
// Operands are converted to the output type (f32 for f16/bf16) and broadcast, as in elementwise.h.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (x, q): sum_{k>=0} (q + k)^-x by Euler-Maclaurin summation, with PyTorch's special values: inf
// at x == 1 and at q a non-positive integer, NaN for x < 1, for q < 0 with x not an integer, and
// at q == inf. Negative q sum their terms up to q + k >= 10 in a loop, so q < -1e6 gives NaN.
extern const graph::OpDef kZeta;
// (x), floats = {n}, n >= 1: the n-th derivative of digamma, (-1)^(n+1) n! zeta(n + 1, x); n == 1
// by the reflection formula for x < 0.5 as PyTorch's trigamma (finite at the negative integers,
// where sin(pi x) rounds to nonzero; 0 at +inf).
extern const graph::OpDef kPolygamma;
// (a, x): the regularized lower and upper incomplete gamma functions P(a, x) and Q(a, x): the
// power series of P for x < a + 1, Legendre's continued fraction for Q (modified Lentz) beyond,
// each iterated to convergence (at most 5000 steps: within 1e-9 for a up to about 1e5).
// NaN for negative or NaN operands and at a == x == 0.
extern const graph::OpDef kIgamma;
extern const graph::OpDef kIgammac;

}  // namespace torch_pjrt::lowering

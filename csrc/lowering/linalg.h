// Matrix decompositions and solves StableHLO expresses directly: Cholesky and triangular solves.
// Each entry's comment gives its operands and attributes; output types come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (a [..., n, n]) -> (L, info [...] int32): the lower Cholesky factor with the upper triangle
// zeroed (ints[0] = 1: its conjugate transpose, the upper factor), and info: 0, or the position
// (from 1) of the first diagonal element of L that is not positive. XLA gives NaN for the whole
// factor when it fails, so that is 1 where LAPACK names the order of the failing leading minor.
extern const graph::OpDef kCholesky;
// (a [..., n, n], b [..., n, k] or [..., k, n]) -> x with op(a) x = b (left) or x op(a) = b;
// ints = {left, lower, unit_diagonal, op(a): 0 a, 1 its transpose, 2 its adjoint}. Batch dims
// equal.
extern const graph::OpDef kTriangularSolve;

}  // namespace torch_pjrt::lowering

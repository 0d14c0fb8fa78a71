// Spectral decompositions by Jacobi rotations, as nested stablehlo.while loops (sweeps of cyclic
// (p, q) pairs until a sweep rotates nothing, or a sweep limit). Batched: every matrix turns its
// own pair at each step. Float32/64 and complex64/128. Outputs come unsorted; callers order them.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (a [..., n, n] Hermitian, both triangles filled) -> (w [..., n] real, v [..., n, n]) with
// a = v diag(w) v^H, v unitary: two-sided Jacobi.
extern const graph::OpDef kJacobiEigh;
// (a [..., m, n], m >= n) -> (w [..., m, n], v [..., n, n]) with a v = w, v unitary and the
// columns of w mutually orthogonal (their norms are the singular values): one-sided (Hestenes)
// Jacobi on the columns.
extern const graph::OpDef kJacobiSvd;

}  // namespace torch_pjrt::lowering

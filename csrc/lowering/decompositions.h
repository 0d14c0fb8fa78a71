// Matrix decompositions StableHLO has no op for, as while loops over columns: LU with partial
// pivoting (and the row permutation its pivots describe), Householder QR and products with
// its Q. Each entry's comment gives its operands
// and attributes; output types come from the caller. Float32/64 and complex64/128.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (a [..., m, n]) -> (LU [..., m, n], pivots [..., min(m, n)] int32, info [...] int32): LAPACK's
// getrf: L (unit diagonal, below) and U (on and above the diagonal) packed in one matrix, pivots
// counted from 1 (row k was swapped with row pivots[k] - 1), and info 0 or the position (from 1)
// of the first zero pivot. The pivot is the first row of largest |x| (|re| + |im| for complex).
extern const graph::OpDef kLuFactor;
// (pivots [..., k] int32) -> (perm, inverse [..., m] int32), ints[0] = m: the rows the swaps of
// `pivots` bring to each position (A[perm[i]] = (LU)[i]) and the inverse permutation.
extern const graph::OpDef kLuPermutation;

// (a [..., m, n]) -> (packed [..., m, n], tau [..., min(m, n)]): LAPACK's geqrf: R on and above
// the diagonal, below it the Householder vectors v_i (v_i[i] = 1 implied), and their scalars tau_i,
// with Q = H_0 H_1 ... and H_i = I - tau_i v_i v_i^H. Column i's reflector gives R[i, i] =
// -sign(re a_ii) |a_i| and tau_i = 0 when there is nothing to reflect (as dlarfg/zlarfg).
extern const graph::OpDef kHouseholderQr;
// (v [..., m, k'], tau [..., k], c [..., r, s]) -> op(Q) c (ints[0] = 1, left) or c op(Q), with Q
// the product of the k reflectors stored in v as kHouseholderQr stores them, op(Q) = Q^H when
// ints[1] = 1. m is r (left) or s (right).
extern const graph::OpDef kApplyHouseholder;

}  // namespace torch_pjrt::lowering

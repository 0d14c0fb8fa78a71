// Matrix-product lowerings. Each entry's comment gives its operands and attributes; output types
// always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Both take an optional ints[0]: the hlo::Precision of the product.
// Batched matrix product: operands [B..., M, K] and [B..., K, N] with equal batch dims; the
// second may be a vector [K] (mv, and dot when the first is a vector [K] too).
extern const graph::OpDef kMatmul;
// addmm(self, m1, m2) = floats[0] * self + floats[1] * (m1 @ m2); self broadcast to the output.
// m1 and m2 may carry batch dims (baddbmm), summed over when the output has none (addbmm), or
// m2 may be a vector (addmv). Integer outputs use the scalars' integer parts.
extern const graph::OpDef kAddmm;

}  // namespace torch_pjrt::lowering

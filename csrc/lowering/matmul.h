// Matrix-product lowerings. Each entry's comment gives its operands and attributes; output types
// always come from the caller.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// Both take an optional ints[0]: the hlo::Precision of the product.
// Batched matrix product: operands [B..., M, K] and [B..., K, N] with equal batch dims.
extern const graph::OpDef kMatmul;
// addmm(self, m1, m2) = floats[0] * self + floats[1] * (m1 @ m2); self broadcast to the output.
// m1 and m2 may carry batch dims (baddbmm).
extern const graph::OpDef kAddmm;

}  // namespace torch_pjrt::lowering

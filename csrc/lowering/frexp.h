// frexp as StableHLO bit manipulation: x = mantissa * 2^exponent.
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (x) -> (mantissa of x's type with |mantissa| in [0.5, 1), int32 exponent); subnormals
// included; 0, inf and NaN give (x, 0), as the C library's frexp on PyTorch's CPU.
extern const graph::OpDef kFrexp;

}  // namespace torch_pjrt::lowering
